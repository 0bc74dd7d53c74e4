import Foundation
import Testing
import GRDB
@testable import CourierCore

/// Enqueuing a batch: one transaction, and no file touched before it commits.
@Suite struct EnqueueTests {
    @Test func aBatchThatFailsLeavesTheFirstRequestsPartialOnDisk() async throws {
        try await withFixture { fx in
            let db = try fx.database()
            // A paused download with kept bytes, and another record.
            var a = DownloadRecord(id: "a", remoteUrl: fx.url("a.bin"), localFinalPath: "a.bin", partialPath: "a.bin.partial", mediaId: "1", mediaType: "video")
            a.state = .paused; a.bytesReceived = 1000; a.totalBytes = 5000; a.etag = "\"v1\""
            try await db.save(a)
            try await db.save(DownloadRecord(id: "c", remoteUrl: fx.url("c.bin"), localFinalPath: "c.bin", partialPath: "c.bin.partial", mediaId: "9", mediaType: "video"))
            // The store refuses the batch's second insert (as a constraint would; since v6 a
            // media group may hold several records, so a trigger stands in for one).
            try await db.writer.write { db in
                try db.execute(sql: "CREATE TRIGGER refuse_b BEFORE INSERT ON courierDownload WHEN NEW.id = 'b' BEGIN SELECT RAISE(ABORT, 'refused'); END")
            }
            let kept = Data(repeating: 7, count: 1000)
            try kept.write(to: fx.root.appendingPathComponent("a.bin.partial"))

            let d = try fx.downloader { $0.autoResume = false }
            // The first request would start "a" afresh (another URL: its partial is discarded);
            // the second is refused by the store: the whole batch rolls back.
            await #expect(throws: (any Error).self) {
                try await d.enqueue(batch: [
                    DownloadRequest(id: "a", url: fx.url("other.bin"), destination: "a.bin", mediaId: "1", mediaType: "video"),
                    DownloadRequest(id: "b", url: fx.url("b.bin"), destination: "b.bin", mediaId: "9", mediaType: "video"),
                ])
            }
            await d.shutdown()
            #expect(try Data(contentsOf: fx.root.appendingPathComponent("a.bin.partial")) == kept)
            let after = try #require(try await db.record(id: "a"))
            #expect(after.state == .paused && after.bytesReceived == 1000 && after.remoteUrl == fx.url("a.bin"))
            #expect(try await db.record(id: "b") == nil)
        }
    }
}
