import Courier
import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// Seed 001 as PowerSync's SDK spells it: the initializer with the watched attachments,
/// `startSync()` that reconciles them, `db.watch(options:)` with a mapper,
/// `createAttachmentTable`, both upload spellings, the strategy hook, and the table itself
/// as the trigger of a pass.
@Suite(.serialized) struct PowerSyncSurfaceTests {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("courier-ps-\(UUID().uuidString)")

    private func database() throws -> DatabasePool {
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let db = try DatabasePool(path: base.appendingPathComponent("app.sqlite").path)
        try db.write { db in try db.execute(sql: "CREATE TABLE checklists (id TEXT PRIMARY KEY, photo_id INTEGER)") }
        return db
    }

    /// The seed's adapter, spelled as the seed's example spells it (`data:`).
    final class SeedSpelling: RemoteStorageAdapter, @unchecked Sendable {
        let memory = MemoryDataAdapter()
        func uploadFile(data: Data, attachment: Attachment) async throws { try await memory.uploadFile(fileData: data, attachment: attachment) }
        func downloadFile(attachment: Attachment) async throws -> Data { try await memory.downloadFile(attachment: attachment) }
        func deleteFile(attachment: Attachment) async throws { try await memory.deleteFile(attachment: attachment) }
    }

    struct NeitherSpelling: RemoteStorageAdapter {
        func downloadFile(attachment: Attachment) async throws -> Data { Data() }
        func deleteFile(attachment: Attachment) async throws {}
    }

    struct Prefixed: AttachmentQueueStrategy {
        func resolveNewAttachmentFilename(attachmentId: String, fileExtension: String?) -> String { "photo-\(attachmentId).\(fileExtension ?? "bin")" }
    }

    @Test func theSeedsInitializerAndStartSyncReconcileTheWatchedSet() async throws {
        defer { try? FileManager.default.removeItem(at: base) }
        let db = try database()
        let remote = SeedSpelling()
        await remote.memory.put("photo-42.jpg", Data("jpeg 42".utf8))
        // Integer ids, read by the mapper as text (SqlCursor.getString).
        let watched = try db.watch(options: WatchOptions(sql: "SELECT photo_id FROM checklists WHERE photo_id IS NOT NULL", parameters: [], mapper: { cursor in
            WatchedAttachmentItem(id: try cursor.getString(name: "photo_id"), fileExtension: "jpg")
        }))
        let queue = try AttachmentQueue(db: db, attachmentsDirectory: base.appendingPathComponent("files").path, remoteStorage: remote,
                                        watchedAttachments: watched, syncInterval: 0, strategy: Prefixed())
        try await queue.startSync()   // no `watching:`: the initializer's watched set
        try await db.write { db in try db.execute(sql: "INSERT INTO checklists VALUES ('c1', 42)") }
        #expect(try await eventually(timeout: .seconds(20)) { try await queue.attachment(id: "42")?.state == .synced })
        #expect(try Data(contentsOf: base.appendingPathComponent("files/photo-42.jpg")) == Data("jpeg 42".utf8))
        // Stopped and started again: the watched query is observed anew.
        await queue.stopSync()
        try await queue.startSync()
        try await db.write { db in try db.execute(sql: "DELETE FROM checklists") }
        #expect(try await eventually(timeout: .seconds(20)) { try await queue.attachment(id: "42")?.state == .archived })
        // The seed's upload spelling reaches the adapter.
        let saved = try await queue.saveFile(data: Data("new".utf8), mediaType: "image/jpeg", fileExtension: "jpg")
        #expect(try await eventually(timeout: .seconds(20)) { await remote.memory.files[saved.filename] == Data("new".utf8) })
        await queue.stopSync()
    }

    /// A write to the attachments table through the app's own pool starts a pass: no API
    /// call, no timer (the interval is off).
    @Test func aWriteToTheTableStartsAPass() async throws {
        defer { try? FileManager.default.removeItem(at: base) }
        let db = try database()
        let remote = MemoryDataAdapter()
        var options = AttachmentQueueOptions(); options.syncInterval = .zero
        let queue = try AttachmentQueue(database: db, directory: base.appendingPathComponent("files"), remoteStorage: DataRemoteStorage(wrapping: remote), options: options)
        try await queue.startSync()
        // The app's own SQL: a file it put in the folder, queued for upload by a row.
        try FileManager.default.createDirectory(at: base.appendingPathComponent("files"), withIntermediateDirectories: true)
        try Data("by hand".utf8).write(to: base.appendingPathComponent("files/hand.txt"))
        try await db.write { db in
            try db.execute(sql: "INSERT INTO attachments (id, filename, state, timestamp, local_uri) VALUES ('hand', 'hand.txt', ?, 0, 'hand.txt')",
                           arguments: [AttachmentState.queuedUpload.rawValue])
        }
        #expect(try await eventually(timeout: .seconds(20)) { await remote.files["hand.txt"] == Data("by hand".utf8) })
        #expect(try await queue.attachment(id: "hand")?.state == .synced)
        // And a delete asked for by SQL: gone remotely and locally.
        try await db.write { db in try db.execute(sql: "UPDATE attachments SET state = ? WHERE id = 'hand'", arguments: [AttachmentState.queuedDelete.rawValue]) }
        #expect(try await eventually(timeout: .seconds(20)) { await remote.files["hand.txt"] == nil })
        #expect(try await eventually(timeout: .seconds(20)) { !FileManager.default.fileExists(atPath: base.appendingPathComponent("files/hand.txt").path) })
        await queue.stopSync()
    }

    @Test func anAdapterWithNeitherUploadSpellingFailsWithACode() async throws {
        let storage = DataRemoteStorage(wrapping: NeitherSpelling())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ps-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        await #expect { try await storage.upload(fileAt: file, attachment: Attachment(id: "a", filename: "a", state: .queuedUpload)) } throws: {
            ($0 as? CourierError)?.code == .invalidArgument
        }
    }

    @Test func createAttachmentTableMakesTheSeedsColumns() throws {
        defer { try? FileManager.default.removeItem(at: base) }
        let db = try database()
        try createAttachmentTable(name: "photos").create(in: db)
        let columns = try db.read { db in try db.columns(in: "photos").map(\.name) }
        #expect(columns == AttachmentTableSchema.columns.map(\.name))
        #expect(throws: CourierError.self) { try createAttachmentTable(name: "no spaces") }
    }

    @Test func aCursorSaysWhichColumnIsWrong() throws {
        defer { try? FileManager.default.removeItem(at: base) }
        let db = try database()
        try db.write { db in try db.execute(sql: "INSERT INTO checklists VALUES ('c1', NULL)") }
        let row = try #require(try db.read { db in try Row.fetchOne(db, sql: "SELECT * FROM checklists") })
        let cursor = SqlCursor(row: row)
        #expect(try cursor.getString(name: "id") == "c1")
        #expect(try cursor.getStringOptional(name: "photo_id") == nil)
        #expect { try cursor.getLong(name: "photo_id") } throws: { ($0 as? CourierError)?.message.contains("photo_id") == true }
        #expect { try cursor.getString(name: "nope") } throws: { ($0 as? CourierError)?.message.contains("no column nope") == true }
    }
}
