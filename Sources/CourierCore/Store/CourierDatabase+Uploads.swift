import Foundation
import GRDB

extension CourierDatabase {
    /// v8: resumable uploads (``UploadRecord`` and its ``UploadPart``s).
    static func registerUploads(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("courier.v8.uploads") { db in
            try db.create(table: UploadRecord.databaseTableName) { t in
                t.column("id", .text).primaryKey()
                t.column("sourcePath", .text).notNull()
                t.column("sourceSize", .integer).notNull()
                t.column("sourceModified", .double).notNull()
                t.column("kind", .text).notNull()
                t.column("target", .text).notNull()
                t.column("remoteId", .text)
                t.column("partSize", .integer).notNull()
                t.column("confirmedBytes", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
            try db.create(table: UploadPart.databaseTableName) { t in
                t.column("uploadId", .text).notNull()
                    .references(UploadRecord.databaseTableName, column: "id", onDelete: .cascade)
                t.column("number", .integer).notNull()
                t.column("offset", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("etag", .text)
                t.column("md5", .text).notNull()
                t.column("sha256", .text).notNull()
                t.primaryKey(["uploadId", "number"])
            }
        }
    }

    /// The upload with this id and its confirmed parts, by number.
    public func upload(id: String) async throws -> (record: UploadRecord, parts: [UploadPart])? {
        try await read { db in
            guard let record = try UploadRecord.fetchOne(db, key: id) else { return nil }
            let parts = try UploadPart.filter(Column("uploadId") == id).order(Column("number")).fetchAll(db)
            return (record, parts)
        }
    }

    /// Every upload record, oldest first.
    public func uploads() async throws -> [UploadRecord] {
        try await read { db in try UploadRecord.order(Column("createdAt"), Column("id")).fetchAll(db) }
    }

    /// Starts (or starts again) upload `record.id`: the row replaced, its parts deleted.
    /// Durable before the server is asked for a handle: after a power cut, a record without
    /// one says a handle may exist that was never recorded (S3: see `createdAt`).
    public func beginUpload(_ record: UploadRecord) async throws {
        try await writeDurably { db in
            try UploadPart.filter(Column("uploadId") == record.id).deleteAll(db)
            try record.save(db)
        }
    }

    /// Records the server's handle (S3 upload id, tus URL) of upload `id`, durably: no byte
    /// goes to the handle before a power cut can no longer take it back.
    public func noteUploadHandle(id: String, remoteId: String) async throws {
        try await writeDurably { db in
            try db.execute(sql: "UPDATE \(UploadRecord.databaseTableName) SET remoteId = ?, updatedAt = ? WHERE id = ?",
                           arguments: [remoteId, DatabaseDate.text(Date()), id])
        }
    }

    /// Records (or, `nil`, forgets) the blob the system gave to go on with upload `id`,
    /// durably: a blob is good for one try, and a kill after it was used must not offer it again.
    public func noteUploadResumeData(id: String, _ data: Data?) async throws {
        try await writeDurably { db in
            try db.execute(sql: "UPDATE \(UploadRecord.databaseTableName) SET systemResumeData = ?, updatedAt = ? WHERE id = ?",
                           arguments: [data, DatabaseDate.text(Date()), id])
        }
    }

    /// Records a part the server confirmed and the upload's confirmed bytes, in one
    /// transaction (a part replaces an earlier row of the same number). `confirmedBytes`
    /// `nil` counts the parts' sizes (S3: any order); tus passes the server's offset.
    public func noteUploadPart(_ part: UploadPart, confirmedBytes: Int64? = nil) async throws {
        try await write { db in try Self.notePart(part, confirmedBytes: confirmedBytes, db) }
    }

    /// ``noteUploadPart(_:confirmedBytes:)`` inside a transaction under way.
    static func notePart(_ part: UploadPart, confirmedBytes: Int64?, _ db: Database) throws {
        guard try UploadRecord.exists(db, key: part.uploadId) else { return }
        try part.save(db)
        let table = UploadRecord.databaseTableName, parts = UploadPart.databaseTableName
        let now = DatabaseDate.text(Date())
        if let confirmedBytes {
            try db.execute(sql: "UPDATE \(table) SET confirmedBytes = ?, updatedAt = ? WHERE id = ?", arguments: [confirmedBytes, now, part.uploadId])
        } else {
            try db.execute(sql: "UPDATE \(table) SET confirmedBytes = (SELECT COALESCE(SUM(size), 0) FROM \(parts) WHERE uploadId = ?), updatedAt = ? WHERE id = ?",
                           arguments: [part.uploadId, now, part.uploadId])
        }
    }

    /// Deletes upload `id` and its parts (done, abandoned or started again elsewhere).
    @discardableResult
    public func deleteUpload(id: String) async throws -> Bool {
        try await write { db in
            try UploadPart.filter(Column("uploadId") == id).deleteAll(db)   // also when an app turned foreign keys off
            return try UploadRecord.deleteOne(db, key: id)
        }
    }
}
