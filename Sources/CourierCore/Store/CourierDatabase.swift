import Foundation
import GRDB

/// Courier's persistence: a small `Sendable` front over any GRDB `DatabaseWriter`.
///
/// Open its own file with ``init(path:)``, or join the app's database with
/// ``init(writer:)`` so the app can join Courier's tables and write both in one
/// transaction. Migrations run in `init`.
public struct CourierDatabase: Sendable {
    /// The database Courier reads and writes.
    public let writer: any DatabaseWriter

    /// Joins an existing database (the app's), registering Courier's migrations there.
    public init(writer: any DatabaseWriter) throws {
        self.writer = writer
        do {
            try Self.migrate(writer)
        } catch {
            throw CourierError(.database, "cannot prepare Courier's tables", underlying: error)
        }
    }

    /// Runs Courier's migrations, also when another process (an app's extension, a second
    /// `courier`) migrates the same new file at once. GRDB reads what is applied once and then
    /// runs each migration in a transaction of its own, so the second process meets tables
    /// the first has just made: a failure after which more migrations are applied than
    /// before is the other process's progress, and the rest is run again (at most once per
    /// migration); any other failure is this one's.
    static func migrate(_ writer: any DatabaseWriter) throws {
        let migrator = Self.migrator
        var applied = try writer.writeWithoutTransaction { try migrator.appliedIdentifiers($0) }   // on the writer: a reader kept the schema it read first
        while true {
            do {
                return try migrator.migrate(writer)
            } catch {
                guard let now = try? writer.writeWithoutTransaction({ try migrator.appliedIdentifiers($0) }),   // unreadable: the first error is the one to tell
                      now.count > applied.count else { throw error }
                applied = now
            }
        }
    }

    /// Opens (creating it and its directory if needed) a database file of Courier's own, in
    /// WAL mode with a busy timeout, so a second process waits instead of failing.
    public init(path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try Durability.createFolder(URL(fileURLWithPath: folder))
        } catch {
            throw FileErrors.error(error, "make the database's folder", URL(fileURLWithPath: folder), .write)
        }
        do {
            var config = Configuration()
            config.busyMode = .timeout(10)
            // WAL with synchronous=NORMAL: a commit no longer waits for an fsync of the WAL.
            // The database stays consistent through crashes and power loss; what a power loss
            // may take back is the last progress writes, and the partial file's own length
            // (or the finished file in place) is the truth the engine restarts from anyway.
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            let pool = try DatabasePool(path: path, configuration: config)
            try self.init(writer: pool)
        } catch let error as CourierError {
            throw error
        } catch {
            throw CourierError(.database, "cannot open the database at \(path)", underlying: error)
        }
    }

    /// An in-memory database, for tests and previews.
    public static func inMemory() throws -> CourierDatabase {
        do { return try CourierDatabase(writer: DatabaseQueue()) } catch let e as CourierError { throw e } catch {
            throw CourierError(.database, "cannot open an in-memory database", underlying: error)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("courier.v1.downloads") { db in
            try db.create(table: DownloadRecord.databaseTableName) { t in
                t.column("id", .text).primaryKey()
                t.column("mediaId", .text)
                t.column("mediaType", .text)
                t.column("remoteUrl", .text).notNull()
                t.column("localFinalPath", .text).notNull()
                t.column("partialPath", .text).notNull()
                t.column("bytesReceived", .integer).notNull().defaults(to: 0)
                t.column("totalBytes", .integer)
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("resumable", .boolean).notNull().defaults(to: true)
                t.column("state", .text).notNull()
                t.column("expectedSHA256", .text)
                t.column("priority", .integer).notNull().defaults(to: 0)
                t.column("attemptCount", .integer).notNull().defaults(to: 0)
                t.column("lastErrorCode", .text)
                t.column("lastErrorMessage", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
                t.uniqueKey(["mediaType", "mediaId"])
            }
            try db.create(index: "courierDownload_schedule", on: DownloadRecord.databaseTableName, columns: ["state", "priority", "createdAt"])
        }
        // v2: the lease that keeps two processes from running one download at once.
        migrator.registerMigration("courier.v2.lease") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in
                t.add(column: "leaseOwner", .text)
                t.add(column: "leaseExpiresAt", .datetime)
            }
        }
        // v3: segmented downloads: the connections wanted, and one row per byte range.
        migrator.registerMigration("courier.v3.segments") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in
                t.add(column: "connections", .integer).notNull().defaults(to: 1)
            }
            try db.create(table: Segment.databaseTableName) { t in
                t.column("downloadId", .text).notNull()
                    .references(DownloadRecord.databaseTableName, column: "id", onDelete: .cascade)
                t.column("index", .integer).notNull()
                t.column("start", .integer).notNull()
                t.column("end", .integer).notNull()
                t.column("received", .integer).notNull().defaults(to: 0)
                t.primaryKey(["downloadId", "index"])
            }
        }
        // v4: revalidation: the validators and size of the finished file in place that a
        // fetch-again would replace (If-None-Match / If-Modified-Since; 304 keeps it).
        migrator.registerMigration("courier.v4.held") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in
                t.add(column: "heldEtag", .text)
                t.add(column: "heldLastModified", .text)
                t.add(column: "heldBytes", .integer)
            }
        }
        // v5: background hand-off: what a download handed to the system kept, so its reply
        // can be judged and spliced after a relaunch (state `handedOff`).
        migrator.registerMigration("courier.v5.handoff") { db in
            try db.create(table: HandOffRecord.databaseTableName) { t in
                t.column("downloadId", .text).primaryKey()
                    .references(DownloadRecord.databaseTableName, column: "id", onDelete: .cascade)
                t.column("keptBytes", .integer).notNull()
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("totalBytes", .integer)
                t.column("resumable", .boolean).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("owner", .text)
            }
        }
        registerMediaGroups(&migrator)
        // v7: the reply's `Content-Type` (``DownloadRecord/contentType``).
        migrator.registerMigration("courier.v7.content-type") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in t.add(column: "contentType", .text) }
        }
        registerUploads(&migrator)
        // v9: the size the caller expects (``DownloadRecord/expectedBytes``).
        migrator.registerMigration("courier.v9.expected-size") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in t.add(column: "expectedBytes", .integer) }
        }
        registerUploadHandOffs(&migrator)
        // v11: the bytes received and thrown away (``DownloadRecord/bytesDiscarded``).
        migrator.registerMigration("courier.v11.discarded") { db in
            try db.alter(table: DownloadRecord.databaseTableName) { t in t.add(column: "bytesDiscarded", .integer).notNull().defaults(to: 0) }
        }
        // v12: the blob the system gave to go on with an upload (``UploadRecord/systemResumeData``).
        migrator.registerMigration("courier.v12.upload-resume-data") { db in
            try db.alter(table: UploadRecord.databaseTableName) { t in t.add(column: "systemResumeData", .blob) }
        }
        return migrator
    }
}

extension CourierDatabase {
    /// Runs a write, mapping database errors to ``CourierError/Code/database``.
    func write<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await MappedWriter(writer).write(body)
    }

    /// Runs a write that is on stable storage when it returns (``MappedWriter/writeDurably(_:)``).
    func writeDurably<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await MappedWriter(writer).writeDurably(body)
    }

    /// Runs a read, mapping database errors to ``CourierError/Code/database``.
    func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await MappedWriter(writer).read(body)
    }

    /// The record with this id.
    public func record(id: String) async throws -> DownloadRecord? {
        try await read { db in try DownloadRecord.fetch(db, id: id) }
    }

    /// All records, oldest first.
    public func allRecords() async throws -> [DownloadRecord] {
        try await read { db in try DownloadRecord.order(DownloadRecord.Columns.createdAt, DownloadRecord.Columns.id).fetchAll(db) }
    }

    /// Records that are neither completed nor failed, in scheduling order.
    public func pendingRecords(includePaused: Bool) async throws -> [DownloadRecord] {
        let states: [DownloadState] = includePaused ? [.queued, .downloading, .paused] : [.queued, .downloading]
        return try await read { db in
            try DownloadRecord
                .filter(states.map(\.rawValue).contains(DownloadRecord.Columns.state))
                .order(DownloadRecord.Columns.priority.desc, DownloadRecord.Columns.createdAt, DownloadRecord.Columns.id)
                .fetchAll(db)
        }
    }

    /// Inserts or replaces a record.
    public func save(_ record: DownloadRecord) async throws {
        try await write { db in try record.save(db) }
    }

    /// Deletes a record; returns whether there was one.
    @discardableResult
    public func delete(id: String) async throws -> Bool {
        try await write { db in try DownloadRecord.deleteOne(db, key: id) }
    }

    /// The segments of a download, by start offset (empty for a single-connection one).
    public func segments(id: String) async throws -> [Segment] {
        try await read { db in try Segment.filter(Segment.Columns.downloadId == id).order(Column("start")).fetchAll(db) }
    }

    /// The bytes a download holds: the sum of its segments' received bytes when it is
    /// segmented (its partial file is preallocated, so its length says nothing), else the
    /// partial file's length.
    public func keptBytes(id: String, partial: URL) async throws -> Int64 {
        let segments = try await segments(id: id)
        return segments.isEmpty ? PartialFile.length(at: partial) : segments.reduce(0) { $0 + $1.received }
    }

    /// Replaces a download's segments with `segments` and applies `change` to its record,
    /// in one transaction, while it is `downloading` under `lease`; `nil` otherwise.
    public func replaceSegments(id: String, with segments: [Segment], lease: LeaseOwner,
                                _ change: @Sendable @escaping (inout DownloadRecord) -> Void) async throws -> DownloadRecord? {
        try await write { db in
            guard var record = try DownloadRecord.fetch(db, id: id), record.state == .downloading, !lease.isBlocked(by: record) else { return nil }
            let stored = record
            change(&record)
            record.updatedAt = Date()
            try record.updateRow(db, from: stored)
            try Segment.filter(Segment.Columns.downloadId == id).deleteAll(db)
            for segment in segments { try segment.insert(db) }
            return record
        }
    }

    /// Moves every record in `states` back to `queued` in one statement (thousands cost
    /// one commit), except those another live owner leases and those in `excluding`;
    /// failed ones start with a fresh attempt count. Returns the queued ids in scheduling
    /// order: ids only, not records, so a long queue is never loaded whole.
    ///
    /// With `listingIDs: false`, only the count: not even the ids are read.
    public func requeue(states: [DownloadState], owner: LeaseOwner, excluding: Set<String>,
                        listingIDs wantIDs: Bool = true) async throws -> (ids: [String], count: Int) {
        try await write { db in
            let table = DownloadRecord.databaseTableName
            let now = owner.wallClock()
            let nowText = DatabaseDate.text(now)
            // Leases that look live: only a process of this host that is gone may lose one early.
            let leased = try DownloadRecord
                .filter(states.map(\.rawValue).contains(DownloadRecord.Columns.state))
                .filter(Column("leaseOwner") != nil && Column("leaseOwner") != owner.id && Column("leaseExpiresAt") > nowText)
                .fetchAll(db)
            let skip = Array(excluding.union(leased.filter { owner.isBlocked(by: $0, now: now) }.map(\.id)))
            let skipList = skip.isEmpty ? "" : " AND id NOT IN (\(databaseQuestionMarks(count: skip.count)))"
            let stateList = databaseQuestionMarks(count: states.count)
            var arguments = StatementArguments([nowText])
            arguments += StatementArguments(states.map(\.rawValue))
            arguments += StatementArguments(skip)
            try db.execute(sql: """
                UPDATE \(table) SET \(DownloadRecord.requeueAssignments)
                WHERE state IN (\(stateList))\(skipList)
                """, arguments: arguments)
            if !wantIDs {
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE state = 'queued'\(skipList)", arguments: StatementArguments(skip)) ?? 0
                return ([], count)
            }
            let ids = try String.fetchAll(db, sql: """
                SELECT id FROM \(table) WHERE state = 'queued'\(skipList) ORDER BY priority DESC, createdAt, id
                """, arguments: StatementArguments(skip))
            return (ids, ids.count)
        }
    }

    /// The next queued records to run, in scheduling order, that no live lease holds and
    /// that are not in `excluding`: a page of the queue.
    public func nextQueued(limit: Int, excluding: Set<String>, owner: LeaseOwner) async throws -> [DownloadRecord] {
        try await read { db in
            var request = DownloadRecord
                .filter(DownloadRecord.Columns.state == DownloadState.queued.rawValue)
                .order(DownloadRecord.Columns.priority.desc, DownloadRecord.Columns.createdAt, DownloadRecord.Columns.id)
            if !excluding.isEmpty { request = request.filter(!excluding.contains(DownloadRecord.Columns.id)) }
            var page: [DownloadRecord] = []
            for record in try request.limit(limit * 2).fetchAll(db) where !owner.isBlocked(by: record) && page.count < limit {
                page.append(record)
            }
            return page
        }
    }

    /// Deletes a download's segments.
    public func deleteSegments(id: String) async throws {
        _ = try await write { db in try Segment.filter(Segment.Columns.downloadId == id).deleteAll(db) }
    }

    /// Clears the record's lease if `owner` still holds it.
    public func releaseLease(id: String, owner: LeaseOwner) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE \(DownloadRecord.databaseTableName) SET leaseOwner = NULL, leaseExpiresAt = NULL WHERE id = ? AND leaseOwner = ?",
                           arguments: [id, owner.id])
        }
    }

    /// Applies a change to a record only while it is still in one of `expected` states, so
    /// a pause or cancel made by another process is never overwritten. Returns the updated
    /// record, or `nil` when the record is gone or in another state.
    ///
    /// With `lease`, the change is also refused (`nil`) while another owner's lease on the
    /// record is in force (see ``LeaseOwner``).
    public func update(id: String, ifStateIn expected: Set<DownloadState>, lease: LeaseOwner? = nil,
                       _ change: @Sendable @escaping (inout DownloadRecord) -> Void) async throws -> DownloadRecord? {
        try await write { db in
            guard var record = try DownloadRecord.fetch(db, id: id), expected.contains(record.state) else { return nil }
            if let lease, lease.isBlocked(by: record) { return nil }
            let stored = record
            change(&record)
            record.updatedAt = Date()
            try record.updateRow(db, from: stored)
            return record
        }
    }
}
