import Foundation
import GRDB

/// One piece of an upload handed to the system while the app is suspended: an S3 part or a
/// tus chunk, sent by an upload task *from a file* (a background session takes no other
/// body). The row is written before the task is made, so a relaunch knows what each task
/// was; it is deleted in the transaction that records the server's confirmation (the part
/// then becomes an ``UploadPart`` like one the engine sent), or when the task ends without
/// one (the engine sends that piece itself later).
public struct UploadHandOffPiece: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "courierUploadHandOff"
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { DatabaseDate.text($0) } }
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .custom { DatabaseDate.parse($0) } }

    /// The upload's id (``UploadRecord/id``).
    public var uploadId: String
    /// The S3 part number, or the tus chunk's index.
    public var number: Int
    /// Where its bytes are in the source file, and how many.
    public var offset: Int64
    /// How many bytes the piece holds.
    public var size: Int64
    /// Hex MD5 and hex SHA-256 of those bytes (what the server's confirmation is checked
    /// against, and what the confirmed ``UploadPart`` keeps).
    public var md5: String
    /// Hex SHA-256 of the piece's bytes.
    public var sha256: String
    /// The file the task sends: a copy of the piece's bytes, or the source file itself when
    /// the piece is all of it.
    public var bodyPath: String
    /// Whether ``bodyPath`` is a copy to delete once the piece's task ended.
    public var ownsBody: Bool
    /// When it was handed off, and by which ``LeaseOwner``.
    public var createdAt: Date
    /// The ``LeaseOwner`` that handed it off, `nil` for an unowned piece.
    public var owner: String?

    /// The task's `taskDescription`: tells an upload piece's task from a download's.
    public var taskID: String { Self.taskPrefix + uploadId + "#" + String(number) }
    /// What every upload piece's `taskDescription` starts with (a download id cannot hold a
    /// newline: ``SafePath/validateIdentifier(_:)``).
    public static let taskPrefix = "courier-upload\n"

    /// Makes a piece.
    public init(uploadId: String, number: Int, offset: Int64, size: Int64, md5: String, sha256: String, bodyPath: String,
                ownsBody: Bool, owner: LeaseOwner?, at date: Date = Date()) {
        self.uploadId = uploadId
        self.number = number
        self.offset = offset
        self.size = size
        self.md5 = md5
        self.sha256 = sha256
        self.bodyPath = bodyPath
        self.ownsBody = ownsBody
        createdAt = date
        self.owner = owner?.id
    }
}

extension CourierDatabase {
    /// v10: upload pieces handed to the system (``UploadHandOffPiece``).
    static func registerUploadHandOffs(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("courier.v10.upload-handoff") { db in
            try db.create(table: UploadHandOffPiece.databaseTableName) { t in
                t.column("uploadId", .text).notNull()
                    .references(UploadRecord.databaseTableName, column: "id", onDelete: .cascade)
                t.column("number", .integer).notNull()
                t.column("offset", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("md5", .text).notNull()
                t.column("sha256", .text).notNull()
                t.column("bodyPath", .text).notNull()
                t.column("ownsBody", .boolean).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("owner", .text)
                t.primaryKey(["uploadId", "number"])
            }
        }
    }

    /// Records pieces of upload `id` as handed off, in one transaction; false (nothing
    /// recorded) when the upload has no record.
    public func handOffUploadPieces(_ pieces: [UploadHandOffPiece]) async throws -> Bool {
        try await write { db in
            for id in Set(pieces.map(\.uploadId)) where try !UploadRecord.exists(db, key: id) { return false }
            for piece in pieces { try piece.insert(db, onConflict: .replace) }
            return true
        }
    }

    /// The pieces handed off: of upload `id`, or of every upload.
    public func uploadHandOffPieces(uploadId id: String? = nil) async throws -> [UploadHandOffPiece] {
        try await read { db in
            var request = UploadHandOffPiece.order(Column("uploadId"), Column("number"))
            if let id { request = request.filter(Column("uploadId") == id) }
            return try request.fetchAll(db)
        }
    }

    /// Ends the hand-off of `piece`: its row is deleted and, when the server confirmed it,
    /// the part recorded with the upload's confirmed bytes, in one transaction. Returns
    /// false when the piece was no longer handed off (its hand-off ended before).
    public func endUploadHandOff(_ piece: UploadHandOffPiece, confirmed part: UploadPart?, confirmedBytes: Int64? = nil) async throws -> Bool {
        try await write { db in
            guard try UploadHandOffPiece.deleteOne(db, key: ["uploadId": piece.uploadId, "number": piece.number]) else { return false }
            if let part { try Self.notePart(part, confirmedBytes: confirmedBytes, db) }
            return true
        }
    }
}
