import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// A finished download fetched again (`DownloadRequest.revalidate`): the file in place is
/// kept on a 304, replaced only by a whole, verified new version, and another URL is
/// another file. And a redacted URL is never sent.
@Suite struct RevalidationTests {
    private func rewrite(_ fx: Fixture, _ name: String, size: Int, seed: UInt64, mtime: TimeInterval) throws -> Data {
        let data = try fx.serve(name, size: size, seed: seed)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: mtime)], ofItemAtPath: fx.served.appendingPathComponent(name).path)
        return data
    }

    private func gets(_ fx: Fixture, _ path: String) -> [OriginRequest] {
        fx.origin.requests.filter { $0.path == path && $0.method == "GET" }
    }

    @Test func unchangedIsOneConditionalRequestAndTheSameFile() async throws {
        try await withFixture { fx in
            let data = try rewrite(fx, "f.bin", size: 300_000, seed: 1, mtime: 1_700_000_000)
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin"))
            let first = try await d.waitForCompletion(id: "f")
            let inode = try FileManager.default.attributesOfItem(atPath: fx.root.appendingPathComponent("f.bin").path)[.systemFileNumber] as? Int
            // The origin logs a request once its handler has ended, which can be after the
            // client has every byte: wait for it, or it lands after the clear below.
            #expect(try await eventually { gets(fx, "/f.bin").count == 1 })
            fx.origin.clearRequests()

            // Without revalidate: done is done, nothing is asked.
            #expect(try await d.enqueue(batch: [DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin")])[0].disposition == .alreadyComplete)
            #expect(gets(fx, "/f.bin").isEmpty)

            try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin", revalidate: true))
            let second = try await d.waitForCompletion(id: "f")
            await d.shutdown()
            _ = try await eventually(timeout: .seconds(5)) { !gets(fx, "/f.bin").isEmpty }
            let requests = gets(fx, "/f.bin")
            #expect(requests.count == 1 && requests[0].status == 304 && requests[0].ifNoneMatch == first.etag && requests[0].bodyBytesSent == 0, "\(requests)")
            #expect(second.state == .completed && second.etag == first.etag && second.totalBytes == 300_000 && second.heldBytes == nil, "first: \(first)\nsecond: \(second)")
            #expect(fx.finalData("f.bin") == data)
            #expect(try FileManager.default.attributesOfItem(atPath: fx.root.appendingPathComponent("f.bin").path)[.systemFileNumber] as? Int == inode)
        }
    }

    /// A small file (its validators are written with completion, not before the body) that
    /// arrives slowly enough for a progress write still completes with them: the progress
    /// write once replaced the run's record and dropped them, so the file could never be
    /// revalidated (seen under load as an unconditional GET).
    @Test func aSlowSmallFileKeepsItsValidators() async throws {
        try await withFixture { fx in
            _ = try rewrite(fx, "s.bin", size: 300_000, seed: 2, mtime: 1_700_000_000)
            var slow = Fault(); slow.bytesPerSecond = 400_000
            fx.origin.setFault(slow, for: "/s.bin")
            let d = try fx.downloader { $0.progressPersistInterval = .milliseconds(50) }
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            _ = try await d.waitForCompletion(id: "s")
            await d.shutdown()
            let stored = try #require(try await fx.database().record(id: "s"))
            #expect(stored.state == .completed && stored.etag != nil && stored.lastModified != nil && stored.contentType != nil, "\(stored)")
        }
    }

    @Test func aNewVersionReplacesTheOldOnlyOnceWholeAndVerified() async throws {
        try await withFixture { fx in
            let old = try rewrite(fx, "f.bin", size: 2_000_000, seed: 1, mtime: 1_700_000_000)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin"))
            try await d.waitForCompletion(id: "f")

            // The server's file changes (same size); its new version hangs midway.
            let new = try rewrite(fx, "f.bin", size: 2_000_000, seed: 2, mtime: 1_700_000_100)
            var hang = Fault(); hang.stallAfterBytes = 1_500_000
            fx.origin.setFault(hang, for: "/f.bin")
            try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin", revalidate: true))
            #expect(try await eventually { fx.partialLength("f.bin") > 0 })
            #expect(fx.finalData("f.bin") == old)                    // the old file stays meanwhile
            await d.shutdown()                                        // as a kill or relaunch
            #expect(fx.finalData("f.bin") == old)
            let interrupted = try #require(try await fx.database().record(id: "f"))
            #expect(interrupted.state != .completed && interrupted.heldBytes == 2_000_000)

            fx.origin.setFault(nil, for: "/f.bin")
            fx.origin.clearRequests()
            let again = try fx.downloader()
            #expect(try await again.resumePendingDownloads() == ["f"])
            let done = try await again.waitForCompletion(id: "f")
            await again.shutdown()
            #expect(fx.finalData("f.bin") == new && done.heldBytes == nil && done.heldEtag == nil)
            // It went on from the new version's kept bytes, not from zero and not conditionally.
            let requests = gets(fx, "/f.bin")
            #expect(requests.count == 1 && requests[0].range != nil && requests[0].ifNoneMatch == nil, "\(requests)")
        }
    }

    @Test func anotherURLForTheSameIdIsAnotherFile() async throws {
        try await withFixture { fx in
            let a = try rewrite(fx, "a.bin", size: 100_000, seed: 1, mtime: 1_700_000_000)
            let b = try rewrite(fx, "b.bin", size: 100_000, seed: 2, mtime: 1_700_000_000)
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("a.bin"), destination: "x.bin"))
            try await d.waitForCompletion(id: "x")
            let results = try await d.enqueue(batch: [DownloadRequest(id: "x", url: fx.url("b.bin"), destination: "x.bin")])
            #expect(results[0].disposition == .queued)
            try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(fx.finalData("x.bin") == b && fx.finalData("x.bin") != a)
            // Its first request asks for the whole new file, unconditionally (the old file's
            // validators match this one's: same size and date). A later one (a stall under
            // load cut the first) may only go on from bytes of this file, already sent.
            let asked = gets(fx, "/b.bin")
            #expect(asked.first.map { $0.ifNoneMatch == nil && $0.range == nil } == true, "\(asked)")
            #expect(asked.allSatisfy { $0.ifNoneMatch == nil }, "\(asked)")
            #expect(asked.dropFirst().allSatisfy { $0.range == nil || asked[0].bodyBytesSent > 0 }, "\(asked)")
        }
    }

    @Test func aRedactedURLIsNeverSent() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 100_000)
            let db = try fx.database()
            // As a relaunch finds it: the record keeps the URL without its secret.
            try await db.save(DownloadRecord(id: "s", remoteUrl: fx.url("f.bin") + "?token=REDACTED", localFinalPath: "f.bin", partialPath: "f.bin.partial"))
            let d = try fx.downloader()
            try await d.resume(id: "s")
            await #expect { try await d.waitForCompletion(id: "s") } throws: { ($0 as? CourierError)?.code == .urlNeeded }
            #expect(fx.origin.requests.isEmpty)
            // Given the full URL again, it goes on; a URL of another file is refused.
            await #expect { try await d.resume(id: "s", url: fx.url("g.bin") + "?token=abc") } throws: { ($0 as? CourierError)?.code == .invalidArgument }
            try await d.resume(id: "s", url: fx.url("f.bin") + "?token=abc")
            try await d.waitForCompletion(id: "s")
            await d.shutdown()
            #expect(fx.origin.requests.allSatisfy { !$0.query!.contains("REDACTED") })
        }
    }
}
