import Foundation
import Testing
@_spi(Testing) @testable import CourierCore
import CourierOrigin

/// Segmented downloads against the origin: parallel ranges, resume of every range, restart
/// on a changed file, fallback without ranges or for small files, and the re-split.
@Suite struct SegmentedTests {
    private func segmentedDownloader(_ fx: Fixture, minSegment: Int64 = 256 << 10, idleTimeout: Duration = .seconds(5)) throws -> Downloader {
        try fx.downloader {
            $0.minSegmentSize = minSegment; $0.segmentBufferSize = 64 << 10; $0.progressPersistInterval = .milliseconds(200)
            $0.idleTimeout = idleTimeout
        }
    }

    private func gets(_ fx: Fixture, _ path: String) -> [OriginRequest] {
        fx.origin.requests.filter { $0.path == path && $0.method == "GET" }
    }

    @Test func aLargeFileIsFetchedInParallelRanges() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 3_000_000)
            let d = try segmentedDownloader(fx)
            try await d.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", sha256: Fixture.sha256(data), connections: 4))
            let done = try await d.waitForCompletion(id: "big")
            await d.shutdown()
            #expect(done.state == .completed && done.connections == 4)
            #expect(fx.finalData("big.bin") == data)
            let requests = gets(fx, "/big.bin")
            // The first reply (from byte 0) becomes the first range; three more start at once.
            // A range that ends early may take half of another (a re-split), so there may be more.
            #expect(Set(requests.compactMap(\.range)).isSuperset(of: ["bytes=0-", "bytes=750000-1499999", "bytes=1500000-2249999", "bytes=2250000-2999999"]))
            #expect(requests.allSatisfy { $0.status == 206 })
            #expect(requests.allSatisfy { $0.ifRange != nil || $0.range == "bytes=0-" })
            #expect(try await d.database.segments(id: "big").isEmpty)
            #expect(!fx.exists("big.bin.partial"))
        }
    }

    @Test func aStoppedSegmentedDownloadResumesEveryRange() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 4_000_000)
            // Every reply stops after 300 kB and hangs: each of the four 1 MB ranges holds
            // some bytes and none can finish, however slowly this machine runs (a rate limit
            // here let range 0 finish first under load, and the test failed).
            var stall = Fault(); stall.stallAfterBytes = 300_000
            fx.origin.setFault(stall, for: "/big.bin")
            let first = try segmentedDownloader(fx, idleTimeout: .seconds(120))
            try await first.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", connections: 4))
            let db = try fx.database()
            #expect(try await eventually(timeout: .seconds(60)) { try await db.segments(id: "big").filter { $0.received > 0 }.count == 4 })
            await first.shutdown()                                  // as a relaunch: partial and ranges kept
            let saved = try await db.segments(id: "big")
            #expect(saved.count == 4 && saved.allSatisfy { $0.received > 0 && !$0.isComplete })
            #expect(PartialFile.length(at: fx.root.appendingPathComponent("big.bin.partial")) == 4_000_000)   // preallocated
            let kept = saved.reduce(0) { $0 + $1.received }
            #expect(try await db.record(id: "big")?.bytesReceived == kept)

            fx.origin.setFault(nil, for: "/big.bin")
            fx.origin.clearRequests()
            let second = try segmentedDownloader(fx)
            #expect(try await second.resumePendingDownloads() == ["big"])
            try await second.waitForCompletion(id: "big")
            await second.shutdown()
            #expect(fx.finalData("big.bin") == data)
            // Every range went on from its saved progress, with If-Range; nothing from zero.
            let requests = gets(fx, "/big.bin")
            let starts = Set(saved.map { "bytes=\($0.next)-\($0.end - 1)" })
            #expect(Set(requests.compactMap(\.range)).isSuperset(of: starts))
            #expect(requests.allSatisfy { $0.ifRange != nil && $0.status == 206 && $0.range != "bytes=0-" })
            // No request asks again for a byte a range already held.
            for r in requests.compactMap(\.range) {
                let start = Int64(r.dropFirst(6).prefix { $0 != "-" }) ?? -1
                #expect(!saved.contains { start >= $0.start && start < $0.next }, "\(r) refetches kept bytes")
            }
            // Less than a full download went out (a re-split may cut a reply short, and what
            // the origin already pushed into the socket then counts as sent). Not behind nginx
            // (the HTTP/2 pass): there a cut reply also counts what the origin pushed toward
            // the proxy, up to its socket buffers (1.3 MB more than the rest once), so this sum
            // says nothing; the checks of every range's start above carry the rule there.
            if !Fixture.overHTTP2 {
                #expect(requests.map(\.bodyBytesSent).reduce(0, +) < Int64(data.count))
            }
        }
    }

    /// Found by scripts/chaos: killed after every range was whole but before the rename, the
    /// next run waited forever for ranges that had nothing left to do.
    @Test(.timeLimit(.minutes(1))) func killedAfterTheLastRangeFinishesWithoutARequest() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 1_000_000)
            let db = try fx.database()
            var r = DownloadRecord(id: "big", remoteUrl: fx.url("big.bin"), localFinalPath: "big.bin", partialPath: "big.bin.partial")
            r.state = .downloading; r.connections = 2; r.totalBytes = 1_000_000; r.etag = "\"v1\""; r.bytesReceived = 1_000_000
            try await db.save(r)
            try await db.writer.write { db in
                try Segment(downloadId: "big", index: 0, start: 0, end: 600_000, received: 600_000).insert(db)
                try Segment(downloadId: "big", index: 1, start: 600_000, end: 1_000_000, received: 400_000).insert(db)
            }
            try data.write(to: fx.root.appendingPathComponent("big.bin.partial"))
            let d = try segmentedDownloader(fx)
            try await d.resumePendingDownloads()
            let done = try await d.waitForCompletion(id: "big")
            await d.shutdown()
            #expect(done.state == .completed)
            #expect(fx.finalData("big.bin") == data)
            #expect(gets(fx, "/big.bin").isEmpty)
            #expect(try await db.segments(id: "big").isEmpty)
        }
    }

    /// Holds its task until it is cancelled (a stop landing in a hook's window).
    static func untilCancelled() async {
        let (held, _) = AsyncStream<Void>.makeStream()
        for await _ in held {}   // an AsyncStream ends for a cancelled task
    }

    /// A 3 MB file in three ranges, each stalled after some bytes and saved, the downloader
    /// shut down; then the file "changes" (its ETag differs from the one the ranges started
    /// with, for the next three requests), so the ranges' replies are 200s. Returns its bytes.
    private func threeRangesThenAChangedFile(_ fx: Fixture) async throws -> Data {
        let data = try fx.serve("big.bin", size: 3_000_000)
        var stall = Fault(); stall.stallAfterBytes = 200_000   // no range can finish first
        fx.origin.setFault(stall, for: "/big.bin")
        let first = try segmentedDownloader(fx, idleTimeout: .seconds(120))
        try await first.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", connections: 3))
        let db = try fx.database()
        #expect(try await eventually(timeout: .seconds(60)) { try await db.segments(id: "big").filter { $0.received > 0 }.count == 3 })
        await first.shutdown()
        var changed = Fault(); changed.changeETag = true; changed.times = 3
        fx.origin.setFault(changed, for: "/big.bin")
        return data
    }

    /// Found as a flake of the test below (CI on 85790dc: the file completed with no request
    /// from byte 0). A restart from zero forgot the ranges in one write and deleted the file
    /// after it, and reset the record in a third: a stop between the first two left a
    /// preallocated partial (zeros between the ranges' bytes) with no ranges and the old
    /// validators and size, and the next run trusted its length, asked for
    /// `bytes=<total>-`, and a 416 completed a file of zeros. Here the stop lands in that
    /// window every time (``DownloaderConfiguration/duringRestart``).
    @Test(.timeLimit(.minutes(1))) func aStopDuringARestartNeverLeavesAPartialTrustedByItsLength() async throws {
        try await withFixture { fx in
            let data = try await threeRangesThenAChangedFile(fx)
            let inRestart = AsyncStream<Void>.makeStream()
            let second = try fx.downloader {
                $0.minSegmentSize = 256 << 10; $0.segmentBufferSize = 64 << 10; $0.progressPersistInterval = .milliseconds(200)
                $0.duringRestart = { inRestart.continuation.yield(); await Self.untilCancelled() }
            }
            try await second.resumePendingDownloads()
            var reached = inRestart.stream.makeAsyncIterator()
            _ = await reached.next()
            await second.shutdown()   // the stop lands between the restart's record write and the file's deletion
            fx.origin.setFault(nil, for: "/big.bin")
            let third = try segmentedDownloader(fx)
            try await third.resumePendingDownloads()
            let done = try await third.waitForCompletion(id: "big")
            await third.shutdown()
            #expect(done.state == .completed)
            #expect(fx.finalData("big.bin") == data)
        }
    }

    @Test func aFileChangedMidwayRestartsTheWholeDownload() async throws {
        try await withFixture { fx in
            let data = try await threeRangesThenAChangedFile(fx)
            fx.origin.clearRequests()
            let second = try segmentedDownloader(fx)
            try await second.resumePendingDownloads()
            let done = try await second.waitForCompletion(id: "big")
            await second.shutdown()
            #expect(fx.finalData("big.bin") == data)
            #expect(done.state == .completed)
            let requests = gets(fx, "/big.bin")
            // A range was answered 200 (If-Range failed), then it started again from byte 0.
            #expect(requests.contains { $0.status == 200 })
            #expect(requests.contains { $0.range == "bytes=0-" })
        }
    }

    @Test func aServerWithoutRangesFallsBackToOneConnection() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 2_000_000)
            var norange = Fault(); norange.ignoreRange = true
            fx.origin.setFault(norange, for: "/big.bin")
            let d = try segmentedDownloader(fx)
            try await d.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", connections: 4))
            try await d.waitForCompletion(id: "big")
            await d.shutdown()
            #expect(fx.finalData("big.bin") == data)
            let requests = gets(fx, "/big.bin")
            #expect(requests.count == 1 && requests[0].status == 200)
            #expect(try await d.database.segments(id: "big").isEmpty)
        }
    }

    @Test func aSmallFileUsesOneConnection() async throws {
        try await withFixture { fx in
            let data = try fx.serve("small.bin", size: 300_000)
            let d = try segmentedDownloader(fx)   // under 2 × 256 KiB: not split
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("small.bin"), destination: "small.bin", connections: 8))
            try await d.waitForCompletion(id: "s")
            await d.shutdown()
            #expect(fx.finalData("small.bin") == data)
            #expect(gets(fx, "/small.bin").count == 1)
        }
    }

    @Test func aSlowRangeIsSplitWhenAConnectionFreesUp() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 4_000_000)
            // The first connection stalls after 100 kB until the test ends the stall; the
            // second range finishes, and its connection takes half of what the first has
            // left. The stall lasts until that split-off range is asked for, however slow the
            // loaded machine is, and the idle watchdog is longer than the test's wait, so no
            // retry of the stalled range can stand in for the split.
            var stall = Fault(); stall.stallAfterBytes = 100_000; stall.times = 1
            fx.origin.setFault(stall, for: "/big.bin")
            let d = try segmentedDownloader(fx, idleTimeout: .seconds(300))
            try await d.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", sha256: Fixture.sha256(data), connections: 2))
            // A range starting inside the first half, past the stall: the split-off part of the stalled range.
            let split = try await eventually {
                gets(fx, "/big.bin").compactMap(\.range).contains { r in
                    guard let start = Int(r.dropFirst(6).prefix { $0 != "-" }) else { return false }
                    return start > 100_000 && start < 2_000_000
                }
            }
            fx.origin.endStalls()
            try await d.waitForCompletion(id: "big")
            await d.shutdown()
            #expect(split, "\(gets(fx, "/big.bin").compactMap(\.range))")
            #expect(fx.finalData("big.bin") == data)
            #expect(gets(fx, "/big.bin").compactMap(\.range).count >= 3, "\(gets(fx, "/big.bin").compactMap(\.range))")
        }
    }

    /// Another process cancels a segmented download while its ranges run: its cancel
    /// deletes the partial, the run's next save of the ranges finds it gone, and the run ends
    /// cancelled with no file left (it ended failed, E_FNF_WRITE, before it asked why).
    @Test func aSegmentedDownloadCancelledByAnotherProcessEndsCancelled() async throws {
        try await withFixture { fx in
            try fx.serve("big.bin", size: 3_000_000)
            // Every reply stalls after 300 kB until the cancel is made (ranges left to flow
            // could all end first).
            var fault = Fault(); fault.bytesPerSecond = 500_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/big.bin")
            let running = try segmentedDownloader(fx, idleTimeout: .seconds(60))
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in running.events(for: "big") { if let end = e.end { return end } }; return nil }
            try await running.enqueue(DownloadRequest(id: "big", url: fx.url("big.bin"), destination: "big.bin", connections: 3))
            #expect(try await eventually { try await running.database.segments(id: "big").count >= 2 })
            try await other.cancel(id: "big")
            fx.origin.setFault(nil, for: "/big.bin")
            fx.origin.endStalls()
            let end = await ended.value
            #expect(end == .cancelled, "ended \(String(describing: end))")
            #expect(!fx.exists("big.bin") && !fx.exists("big.bin.partial"))
            await running.shutdown(); await other.shutdown()
        }
    }
}
