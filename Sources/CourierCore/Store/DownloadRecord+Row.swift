import Foundation
import GRDB

/// The record's row, written and read by hand: GRDB's Codable path (an encoder and a
/// decoder per row, every key hashed and looked up) was 7 % of the samples of a 2,000-file
/// run, where the engine reads and writes a record three times per file (BENCHMARKS.md,
/// "What profiling found"). The same columns and the same stored forms as that path:
/// `RowWriteTests` compares both, column by column, both ways.
extension DownloadRecord {
    /// Every column, `id` first; ``columnValues`` follows this order.
    static let columnNames = [
        "id", "mediaId", "mediaType", "remoteUrl", "localFinalPath", "partialPath", "bytesReceived", "totalBytes",
        "etag", "lastModified", "resumable", "state", "expectedSHA256", "priority", "attemptCount", "lastErrorCode",
        "lastErrorMessage", "createdAt", "updatedAt", "leaseOwner", "leaseExpiresAt", "connections", "heldEtag",
        "heldLastModified", "heldBytes", "contentType", "expectedBytes", "bytesDiscarded",
    ]

    /// The stored form of each column, in ``columnNames``'s order (dates as `DatabaseDate` text).
    var columnValues: [DatabaseValue] {
        [id.databaseValue, mediaId.databaseValue, mediaType.databaseValue, remoteUrl.databaseValue,
         localFinalPath.databaseValue, partialPath.databaseValue, bytesReceived.databaseValue, totalBytes.databaseValue,
         etag.databaseValue, lastModified.databaseValue, resumable.databaseValue, state.rawValue.databaseValue,
         expectedSHA256.databaseValue, priority.databaseValue, attemptCount.databaseValue, lastErrorCode.databaseValue,
         lastErrorMessage.databaseValue, DatabaseDate.text(createdAt).databaseValue, DatabaseDate.text(updatedAt).databaseValue,
         leaseOwner.databaseValue, leaseExpiresAt.map(DatabaseDate.text).databaseValue, connections.databaseValue,
         heldEtag.databaseValue, heldLastModified.databaseValue, heldBytes.databaseValue, contentType.databaseValue,
         expectedBytes.databaseValue, bytesDiscarded.databaseValue]
    }

    /// Whether `stored` holds the same value in each column, in ``columnNames``'s order
    /// (compared as Swift values: cheaper than both stored forms; a date differing below the
    /// millisecond is only written again). `RowWriteTests` changes each column in turn.
    func sameColumns(as stored: DownloadRecord) -> [Bool] {
        [id == stored.id, mediaId == stored.mediaId, mediaType == stored.mediaType, remoteUrl == stored.remoteUrl,
         localFinalPath == stored.localFinalPath, partialPath == stored.partialPath, bytesReceived == stored.bytesReceived,
         totalBytes == stored.totalBytes, etag == stored.etag, lastModified == stored.lastModified, resumable == stored.resumable,
         state == stored.state, expectedSHA256 == stored.expectedSHA256, priority == stored.priority, attemptCount == stored.attemptCount,
         lastErrorCode == stored.lastErrorCode, lastErrorMessage == stored.lastErrorMessage, createdAt == stored.createdAt,
         updatedAt == stored.updatedAt, leaseOwner == stored.leaseOwner, leaseExpiresAt == stored.leaseExpiresAt,
         connections == stored.connections, heldEtag == stored.heldEtag, heldLastModified == stored.heldLastModified,
         heldBytes == stored.heldBytes, contentType == stored.contentType, expectedBytes == stored.expectedBytes,
         bytesDiscarded == stored.bytesDiscarded]
    }

    public func encode(to container: inout PersistenceContainer) throws {
        for (name, value) in zip(Self.columnNames, columnValues) { container[name] = value }
    }

    public init(row: Row) throws {
        func date(_ column: String) throws -> Date? {
            let value: DatabaseValue = row[column]
            if value.isNull { return nil }
            guard let date = DatabaseDate.parse(value) else { throw CourierError(.database, "download row: \(column) is not a date: \(value)") }
            return date
        }
        func required<T>(_ value: T?, _ column: String) throws -> T {
            guard let value else { throw CourierError(.database, "download row: \(column) is missing") }
            return value
        }
        id = try row.decode(forColumn: "id")
        mediaId = try row.decode(forColumn: "mediaId")
        mediaType = try row.decode(forColumn: "mediaType")
        remoteUrl = try row.decode(forColumn: "remoteUrl")
        localFinalPath = try row.decode(forColumn: "localFinalPath")
        partialPath = try row.decode(forColumn: "partialPath")
        bytesReceived = try row.decode(forColumn: "bytesReceived")
        totalBytes = try row.decode(forColumn: "totalBytes")
        etag = try row.decode(forColumn: "etag")
        lastModified = try row.decode(forColumn: "lastModified")
        resumable = try row.decode(forColumn: "resumable")
        let stateName: String = try row.decode(forColumn: "state")
        state = try required(DownloadState(rawValue: stateName), "a known state (\(stateName))")
        expectedSHA256 = try row.decode(forColumn: "expectedSHA256")
        priority = try row.decode(forColumn: "priority")
        attemptCount = try row.decode(forColumn: "attemptCount")
        lastErrorCode = try row.decode(forColumn: "lastErrorCode")
        lastErrorMessage = try row.decode(forColumn: "lastErrorMessage")
        createdAt = try required(date("createdAt"), "createdAt")
        updatedAt = try required(date("updatedAt"), "updatedAt")
        leaseOwner = try row.decode(forColumn: "leaseOwner")
        leaseExpiresAt = try date("leaseExpiresAt")
        connections = try row.decode(forColumn: "connections")
        heldEtag = try row.decode(forColumn: "heldEtag")
        heldLastModified = try row.decode(forColumn: "heldLastModified")
        heldBytes = try row.decode(forColumn: "heldBytes")
        contentType = try row.decode(forColumn: "contentType")
        expectedBytes = try row.decode(forColumn: "expectedBytes")
        bytesDiscarded = try row.decode(forColumn: "bytesDiscarded")
    }

    /// `UPDATE … SET` every column but `id` `WHERE id = ?`, built once.
    private static let updateSQL = "UPDATE \(databaseTableName) SET "
        + columnNames.dropFirst().map { "\"\($0)\" = ?" }.joined(separator: ", ") + " WHERE id = ?"

    /// Writes every column of this record over its row (found by ``id``), through one cached
    /// statement: what GRDB's `update(_:)` does, without building its SQL on every call (it
    /// asks for the table's columns, lowercases and intersects their names and compiles the
    /// statement each time). Throws `RecordError.recordNotFound` when no row has this id, as
    /// `update(_:)` does.
    func updateRow(_ db: Database) throws {
        var values = columnValues
        values.append(values.removeFirst())   // the id goes last, to the WHERE
        try db.cachedStatement(sql: Self.updateSQL).execute(arguments: StatementArguments(values))
        if db.changesCount == 0 {
            throw RecordError.recordNotFound(databaseTableName: Self.databaseTableName, key: ["id": id.databaseValue])
        }
    }

    /// Writes only the columns that differ from `stored`, this row as the same transaction
    /// read it. SQLite rewrites an index whenever one of its columns is in the `SET`, equal
    /// or not: with every column there, a state change also rewrote the media index (three
    /// pages a commit where two do) and a progress write two indexes it does not change
    /// (three where one does): 29 % fewer bytes into the database a small file (BENCHMARKS.md,
    /// "What profiling found"). One cached statement per set of changed columns (a few
    /// shapes in practice). Throws `RecordError.recordNotFound` as ``updateRow(_:)`` does.
    func updateRow(_ db: Database, from stored: DownloadRecord) throws {
        guard stored.id == id else { return try updateRow(db) }
        let same = sameColumns(as: stored), all = columnValues
        var sql = "UPDATE \(Self.databaseTableName) SET "
        var values: [DatabaseValue] = []
        for index in 1..<all.count where !same[index] {
            sql += values.isEmpty ? "\"\(Self.columnNames[index])\" = ?" : ", \"\(Self.columnNames[index])\" = ?"
            values.append(all[index])
        }
        guard !values.isEmpty else { return }   // nothing changed: the row read in this transaction stays as it is
        values.append(all[0])
        try db.cachedStatement(sql: sql + " WHERE id = ?").execute(arguments: StatementArguments(values))
        if db.changesCount == 0 {
            throw RecordError.recordNotFound(databaseTableName: Self.databaseTableName, key: ["id": id.databaseValue])
        }
    }
}
