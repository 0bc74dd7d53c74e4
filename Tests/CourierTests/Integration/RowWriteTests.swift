import Foundation
import GRDB
import Testing
@testable import CourierCore

@Suite struct RowWriteTests {
    /// The engine's own row write (`updateRow`) is GRDB's `update` without rebuilding the SQL:
    /// every column written, a value set to nil cleared, the id untouched, a missing row an
    /// error — compared column by column with what GRDB's `update` leaves.
    @Test func theRowWriteIsGRDBsUpdate() throws {
        let queue = try DatabaseQueue()
        _ = try CourierDatabase(writer: queue)   // creates the table
        var full = DownloadRecord(id: "a", remoteUrl: "https://x.example/a", localFinalPath: "a", partialPath: "a.partial", mediaId: "m", mediaType: "video")
        full.expectedSHA256 = String(repeating: "0", count: 64)
        full.etag = "\"v1\""; full.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"; full.totalBytes = 10; full.bytesReceived = 4
        full.lastErrorCode = "E_NETWORK"; full.lastErrorMessage = "dropped"; full.leaseOwner = "here:1:x:1"; full.leaseExpiresAt = Date()
        full.heldEtag = "\"h\""; full.heldBytes = 3; full.contentType = "video/mp4"; full.expectedBytes = 10; full.connections = 4
        var cleared = full
        cleared.etag = nil; cleared.lastModified = nil; cleared.totalBytes = nil; cleared.lastErrorCode = nil; cleared.lastErrorMessage = nil
        cleared.leaseOwner = nil; cleared.leaseExpiresAt = nil; cleared.heldEtag = nil; cleared.heldBytes = nil; cleared.contentType = nil
        cleared.mediaId = nil; cleared.expectedSHA256 = nil; cleared.state = DownloadState.completed; cleared.bytesReceived = 10
        var b = full; b.id = "b"
        var clearedB = cleared; clearedB.id = "b"
        let (a, aCleared, bFull, bCleared) = (full, cleared, b, clearedB)
        let rows = try queue.write { db -> (Row?, Row?, DownloadRecord?) in
            try a.insert(db); try bFull.insert(db)
            try aCleared.updateRow(db)     // ours, on "a"
            try bCleared.update(db)        // GRDB's, on "b"
            let ours = try Row.fetchOne(db, sql: "SELECT * FROM courierDownload WHERE id = 'a'")
            let theirs = try Row.fetchOne(db, sql: "SELECT * FROM courierDownload WHERE id = 'b'")
            return (ours, theirs, try DownloadRecord.fetch(db, id: "a"))
        }
        let ours = try #require(rows.0), theirs = try #require(rows.1)
        #expect(ours["id"] as String? == "a" && theirs["id"] as String? == "b")
        func columns(_ row: Row) -> [String: DatabaseValue] {
            Dictionary(uniqueKeysWithValues: row.filter { $0.0 != "id" }.map { ($0.0, $0.1) })
        }
        #expect(columns(ours) == columns(theirs))
        // Read back, it is the record written (dates as stored: to the millisecond).
        var read = try #require(rows.2)
        #expect(abs(read.createdAt.timeIntervalSince(cleared.createdAt)) < 0.001 && abs(read.updatedAt.timeIntervalSince(cleared.updatedAt)) < 0.001)
        read.createdAt = cleared.createdAt; read.updatedAt = cleared.updatedAt
        #expect(read == cleared)
        var nobody = full; nobody.id = "nobody"
        let ghost = nobody
        #expect(throws: RecordError.self) { try queue.write { db in try ghost.updateRow(db) } }
    }

    /// The write of what changed (`updateRow(_:from:)`) leaves the row the full write leaves,
    /// and its `SET` names only what changed (SQLite rewrites an index whenever one of its
    /// columns is there): each column changed alone, in turn, names that column only, so
    /// `sameColumns(as:)` follows `columnNames`; a completion names its own columns and not
    /// `mediaType`/`mediaId`. Nothing changed writes nothing; a row gone is an error.
    @Test func theWriteOfWhatChangedIsTheFullWrite() throws {
        let queue = try DatabaseQueue()
        _ = try CourierDatabase(writer: queue)   // creates the table
        var stored = DownloadRecord(id: "a", remoteUrl: "https://x.example/a", localFinalPath: "a", partialPath: "a.partial", mediaId: "m", mediaType: "video",
                                    now: Date(timeIntervalSince1970: 1_790_000_000))
        stored.etag = "\"v1\""; stored.leaseOwner = "here:1:x:1"; stored.leaseExpiresAt = Date(timeIntervalSince1970: 1_790_000_015); stored.bytesReceived = 4
        var other = DownloadRecord(id: "a", remoteUrl: "https://x.example/b", localFinalPath: "b", partialPath: "b.partial", mediaId: "n", mediaType: "audio",
                                   expectedSHA256: String(repeating: "1", count: 64), priority: 5, now: Date(timeIntervalSince1970: 1_790_000_100))
        other.bytesReceived = 9; other.totalBytes = 12; other.etag = "\"v2\""; other.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"; other.resumable = false
        other.state = .failed; other.attemptCount = 3; other.lastErrorCode = "E_NETWORK"; other.lastErrorMessage = "dropped"
        other.leaseOwner = "there:2:y:2"; other.leaseExpiresAt = Date(timeIntervalSince1970: 1_790_000_200); other.connections = 4; other.heldEtag = "\"h\""
        other.heldLastModified = "Mon, 07 Nov 1994 08:49:37 GMT"; other.heldBytes = 3; other.contentType = "audio/mp4"; other.expectedBytes = 12
        other.bytesDiscarded = 7
        let names = DownloadRecord.columnNames, base = stored.columnValues, changed = other.columnValues
        #expect(names.count == base.count && stored.sameColumns(as: stored).count == names.count)
        var cases: [(column: String, record: DownloadRecord)] = []
        for index in 1..<names.count {
            #expect(base[index] != changed[index], "column \(names[index]) must differ")
            var values = base
            values[index] = changed[index]
            cases.append((names[index], try DownloadRecord(row: Row(Dictionary(uniqueKeysWithValues: zip(names, values.map { $0 as (any DatabaseValueConvertible)? }))))))
        }
        var completed = stored
        completed.complete(length: 10)
        cases.append(("a completion", completed))
        let statements = Statements()
        for (column, record) in cases {
            let (s, r) = (stored, record)
            var b = s; b.id = "b"
            var rb = r; rb.id = "b"
            let (sb, rbb) = (b, rb)
            statements.clear()
            let rows = try queue.write { db -> (Row?, Row?) in
                try db.execute(sql: "DELETE FROM courierDownload")
                try s.insert(db); try sb.insert(db)
                db.trace { event in if case let .statement(st) = event { statements.add(st.sql) } }
                try r.updateRow(db, from: s)   // what changed, on "a"
                try r.updateRow(db, from: r)   // nothing changed: no statement
                db.trace(options: [], nil)
                try rbb.updateRow(db)          // every column, on "b"
                return (try Row.fetchOne(db, sql: "SELECT * FROM courierDownload WHERE id = 'a'"),
                        try Row.fetchOne(db, sql: "SELECT * FROM courierDownload WHERE id = 'b'"))
            }
            let ours = try #require(rows.0), full = try #require(rows.1)
            func columns(_ row: Row) -> [String: DatabaseValue] {
                Dictionary(uniqueKeysWithValues: row.filter { $0.0 != "id" }.map { ($0.0, $0.1) })
            }
            #expect(columns(ours) == columns(full), "\(column)")
            let updates = statements.all.filter { $0.hasPrefix("UPDATE") }
            #expect(updates.count == 1, "\(column)")
            let set = updates.first ?? ""
            let named = names.dropFirst().filter { set.contains("\"\($0)\" = ?") }
            if column == "a completion" {
                #expect(Set(named) == ["state", "leaseOwner", "leaseExpiresAt", "bytesReceived", "totalBytes"])
            } else {
                #expect(named == [column])
            }
        }
        var nobody = completed; nobody.id = "nobody"
        var nobodyStored = stored; nobodyStored.id = "nobody"
        let (ghost, ghostStored) = (nobody, nobodyStored)
        #expect(throws: RecordError.self) { try queue.write { db in try ghost.updateRow(db, from: ghostStored) } }
    }

    /// The SQL a trace saw, from GRDB's tracing closure.
    private final class Statements: @unchecked Sendable {   // guarded by `lock`
        private let lock = NSLock()
        private var sql: [String] = []
        func add(_ s: String) { lock.withLock { sql.append(s) } }
        func clear() { lock.withLock { sql.removeAll() } }
        var all: [String] { lock.withLock { sql } }
    }

    /// The hand-written row is the one GRDB's Codable path wrote and read (databases made by
    /// earlier versions stay readable, and what they read back is unchanged): the same
    /// columns and stored values for a record with every field set and one with every
    /// optional empty, and each read back by both to the same record.
    @Test func theHandWrittenRowIsTheCodableOne() throws {
        var full = DownloadRecord(id: "a", remoteUrl: "https://x.example/a", localFinalPath: "a", partialPath: "a.partial", mediaId: "m", mediaType: "video",
                                  expectedSHA256: String(repeating: "0", count: 64), priority: 3, now: Date(timeIntervalSince1970: 1_790_000_000.123))
        full.etag = "\"v1\""; full.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"; full.totalBytes = 10; full.bytesReceived = 4; full.resumable = false
        full.state = .failed; full.attemptCount = 2; full.lastErrorCode = "E_NETWORK"; full.lastErrorMessage = "dropped"; full.leaseOwner = "here:1:x:1"
        full.leaseExpiresAt = Date(timeIntervalSince1970: 1_790_000_030.5); full.updatedAt = Date(timeIntervalSince1970: 1_790_000_001.999)
        full.heldEtag = "\"h\""; full.heldLastModified = "Mon, 07 Nov 1994 08:49:37 GMT"; full.heldBytes = 3; full.contentType = "video/mp4"
        full.expectedBytes = 10; full.connections = 4
        let empty = DownloadRecord(id: "b", remoteUrl: "https://x.example/b", localFinalPath: "b", partialPath: "b.partial", now: Date(timeIntervalSince1970: 0))
        let queue = try DatabaseQueue()
        _ = try CourierDatabase(writer: queue)   // creates the table
        for record in [full, empty] {
            let ours = try record.databaseDictionary, codable = try CodableRow(record: record).databaseDictionary
            #expect(ours == codable)
            #expect(Set(ours.keys) == Set(try queue.read { db in try db.columns(in: DownloadRecord.databaseTableName).map(\.name) }))
            try queue.write { db in try CodableRow(record: record).insert(db) }
            let (byHand, byCodable) = try queue.read { db in
                (try DownloadRecord.fetch(db, id: record.id), try CodableRead.fetchOne(db, sql: "SELECT * FROM courierDownload WHERE id = ?", arguments: [record.id])?.record)
            }
            #expect(byHand != nil && byHand == byCodable)
            #expect(byHand?.createdAt.timeIntervalSince1970 == (record.createdAt.timeIntervalSince1970 * 1000).rounded() / 1000)
        }
        // A row it cannot read is an error with a code, not a crash.
        try queue.write { db in try db.execute(sql: "UPDATE courierDownload SET state = 'sideways' WHERE id = 'b'") }
        #expect(throws: CourierError.self) { try queue.read { db in try DownloadRecord.fetch(db, id: "b") } }
    }
}

/// A record written through GRDB's Codable path, as `DownloadRecord` was before its row was
/// written by hand.
private struct CodableRow: Encodable, PersistableRecord {
    static let databaseTableName = DownloadRecord.databaseTableName
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { DatabaseDate.text($0) } }
    let record: DownloadRecord
    func encode(to encoder: Encoder) throws { try record.encode(to: encoder) }
}

/// A record read through GRDB's Codable path.
private struct CodableRead: Decodable, FetchableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .custom { DatabaseDate.parse($0) } }
    let record: DownloadRecord
    init(from decoder: Decoder) throws { record = try DownloadRecord(from: decoder) }
}
