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
