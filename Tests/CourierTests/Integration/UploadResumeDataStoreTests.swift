import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierCore

/// v12: an upload record keeps the blob the system gave to go on with it (issue 48:
/// URLSession's own resumable upload, `UploadRecord.systemResumeData`).
@Suite struct UploadResumeDataStoreTests {
    /// A database a v8 Courier left (`Fixtures/schema-v8.sql`) with an upload in it keeps the
    /// upload, with no blob; a blob is then kept durably, and forgotten.
    @Test func anOldUploadGainsNoBlobAndABlobIsKeptThenForgotten() async throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v8.sql")
        let path = temporaryFolder("upload-resume-data").appendingPathComponent("courier.sqlite").path
        let old = try DatabaseQueue(path: path)
        try await old.writeWithoutTransaction { db in
            try db.execute(sql: try String(contentsOf: fixture, encoding: .utf8))
            try db.execute(sql: """
                INSERT INTO courierUpload (id, sourcePath, sourceSize, sourceModified, kind, target, remoteId, partSize, confirmedBytes, createdAt, updatedAt)
                VALUES ('attachment:a', '/tmp/a.bin', 700000, 1.5, 'ietf', 'https://h/files/a.bin', 'https://h/resumable/1', 8388608, 262144,
                        '2026-11-28 00:00:00.000', '2026-11-28 00:00:00.000')
                """)
        }
        try old.close()

        let db = try CourierDatabase(path: path)
        var kept = try #require(try await db.upload(id: "attachment:a")?.record)
        #expect(kept.kind == .ietf && kept.remoteId == "https://h/resumable/1" && kept.confirmedBytes == 262_144 && kept.systemResumeData == nil)
        let blob = Data((0..<300).map { UInt8(truncatingIfNeeded: $0) })   // opaque bytes, zeros and all
        try await db.noteUploadResumeData(id: "attachment:a", blob)
        kept = try #require(try await db.upload(id: "attachment:a")?.record)
        #expect(kept.systemResumeData == blob && kept.remoteId == "https://h/resumable/1")
        try await db.noteUploadResumeData(id: "attachment:a", nil)
        #expect(try await db.upload(id: "attachment:a")?.record.systemResumeData == nil)
        // A new start forgets the blob with the rest.
        try await db.noteUploadResumeData(id: "attachment:a", blob)
        try await db.beginUpload(UploadRecord(id: "attachment:a", sourcePath: "/tmp/a.bin", sourceSize: 700_000, sourceModified: 2,
                                              kind: .ietf, target: "https://h/files/a.bin", partSize: 8 << 20))
        #expect(try await db.upload(id: "attachment:a")?.record.systemResumeData == nil)
    }
}
