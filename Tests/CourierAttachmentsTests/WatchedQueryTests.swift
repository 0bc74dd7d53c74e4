import Courier
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// The app's watched query, whatever its columns hold: integer ids (`SELECT photo_id` where
/// the ids are numbers) are ids; a NULL, real or blob id is no item. Reading the first
/// column with GRDB's `row[0] as String?` trapped on an integer.
@Suite struct WatchedQueryTests {
    @Test func integerIdsAreIdsAndOddOnesAreSkipped() async throws {
        let db = try DatabaseQueue()
        try await db.write { db in
            try db.execute(sql: "CREATE TABLE photos (photo_id, filename, file_extension)")
            try db.execute(sql: """
                INSERT INTO photos VALUES (42, NULL, NULL), ('p7', 'seven.png', NULL), (NULL, 'x.jpg', NULL),
                                          (1.5, NULL, NULL), (x'00ff', NULL, NULL), (43, 99, 7)
                """)
        }
        var stream = AttachmentQueue.watch(sql: "SELECT photo_id, filename, file_extension FROM photos ORDER BY rowid", in: db, defaultExtension: "jpg").makeAsyncIterator()
        let items = try #require(try await stream.next())
        #expect(items == [WatchedAttachmentItem(id: "42", filename: nil, fileExtension: nil), WatchedAttachmentItem(id: "p7", filename: "seven.png", fileExtension: nil),
                          WatchedAttachmentItem(id: "43", filename: "99", fileExtension: "7")])
        let plain = try await db.read { db in try Row.fetchAll(db, sql: "SELECT photo_id FROM photos ORDER BY rowid").compactMap { WatchedAttachmentItem(row: $0, defaultExtension: "jpg") } }
        #expect(plain.map(\.id) == ["42", "p7", "43"] && plain.allSatisfy { $0.fileExtension == "jpg" })
    }
}

/// The attachments table lives in the app's database, so the app's own SQL can write what
/// Courier never would: a text state, a text size. Such a row is E_ATTACHMENT_CORRUPT.
@Suite struct AttachmentRowTests {
    @Test(arguments: ["UPDATE attachments SET state = 'SYNCED'", "UPDATE attachments SET size = 'big'", "UPDATE attachments SET timestamp = 'soon'",
                      "UPDATE attachments SET has_synced = x'01'"])
    func aRowTheAppMangledIsAnErrorNotACrash(_ sql: String) async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let device = try Device(base: base, name: "phone", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")))
        let saved = try await device.queue.saveFile(data: Data("x".utf8), mediaType: "text/plain", fileExtension: "txt")
        try await device.db.write { db in try db.execute(sql: sql) }
        await #expect { _ = try await device.queue.attachment(id: saved.id) } throws: { ($0 as? CourierError)?.code == .attachmentCorrupt }
    }
}
