import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// Small downloads (at most 1 MiB, whose validators are recorded with their completion
/// rather than before the body): a pause, shutdown or hand-off, before or after the first
/// progress write, resumes with a range; a cancel by another process while the bytes flow
/// leaves no file.
@Suite struct SmallDownloadTests {
    /// A small download paused after its first progress write (a slow link) resumes where it
    /// stopped: that write records the reply's validators with the bytes, named by then.
    @Test func aSlowSmallDownloadPausedAfterItsFirstProgressWriteResumesWithARange() async throws {
        try await withFixture { fx in
            let data = try fx.serve("s.bin", size: 600_000)
            // Slow, then stalled half way: a test starved for seconds on a loaded machine still
            // pauses it before its end. A progress write on every chunk, whatever the time: on
            // a write every 200 ms, a run that read the 300 kB before the stall in one burst
            // (starved while they queued) wrote none, and waited in the stall for ever (seen
            // once over URLSession in CI; every time on this clock, which never moves).
            var fault = Fault(); fault.bytesPerSecond = 150_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/s.bin")
            let clock = ManualEngineClock()
            let d = try fx.downloader { $0.clock = clock; $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .zero }
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            #expect(try await eventually { (try await d.record(id: "s")?.bytesReceived ?? 0) > 0 })
            try await d.pause(id: "s")
            let kept = fx.partialLength("s.bin")
            let paused = try await d.record(id: "s")
            #expect(kept > 0 && kept < 600_000 && paused?.bytesReceived == kept)
            fx.origin.setFault(nil, for: "/s.bin")
            try await d.resume(id: "s")
            _ = try await d.waitForCompletion(id: "s")
            #expect(fx.finalData("s.bin") == data)
            #expect(fx.origin.requests.last?.range == "bytes=\(kept)-")
            await d.shutdown()
        }
    }

    static let noProgressWrites: @Sendable (inout DownloaderConfiguration) -> Void = { $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(600) }

    /// A download "s" of 600 kB whose reply stalls after 200 kB, with no progress write while
    /// it runs, once 100 kB have arrived (held in the write buffer, nothing recorded). A stall,
    /// not a rate: however late a loaded machine gets to the stop, the body is not whole.
    static func slowSmallDownload(_ fx: Fixture) async throws -> (Downloader, Data) {
        let data = try fx.serve("s.bin", size: 600_000)
        var fault = Fault(); fault.stallAfterBytes = 200_000
        fx.origin.setFault(fault, for: "/s.bin")
        let d = try fx.downloader(noProgressWrites)
        var events = d.events(for: "s").makeAsyncIterator()
        try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
        while let event = await events.next() {
            if case let .progress(p) = event, p.bytesReceived >= 100_000 { break }
        }
        return (d, data)
    }

    /// Enqueues `file` as download `id` on `d`; returns once its first bytes arrived, with a
    /// task that waits for the download's end.
    static func startAndAwaitBytes(_ fx: Fixture, _ d: Downloader, id: String, file: String) async throws -> Task<DownloadEnd?, Never> {
        let ended = Task { () -> DownloadEnd? in for await e in d.events(for: id) { if let end = e.end { return end } }; return nil }
        var events = d.events(for: id).makeAsyncIterator()
        try await d.enqueue(DownloadRequest(id: id, url: fx.url(file), destination: file))
        while let event = await events.next() {
            if case let .progress(p) = event, p.bytesReceived > 0 { break }
        }
        return ended
    }

    /// Lifts the stall, goes on with `resume`, and checks the download finished whole asking
    /// only for the bytes after `kept`; shuts `d` down.
    static func expectFinishedFromKept(_ fx: Fixture, _ d: Downloader, _ data: Data, _ kept: Int64, resume: () async throws -> Void) async throws {
        fx.origin.setFault(nil, for: "/s.bin")
        try await resume()
        _ = try await d.waitForCompletion(id: "s")
        #expect(fx.finalData("s.bin") == data)
        #expect(fx.origin.requests.last?.range == "bytes=\(kept)-")
        await d.shutdown()
    }

    /// Paused before any progress write (its validators not yet recorded: a small body
    /// records them with its completion), a small download still resumes with a range: the
    /// stopped run hands them over and the pause records them with the kept bytes. The same
    /// for a shutdown (then a new downloader resumes it).
    @Test(arguments: [false, true]) func aSmallDownloadStoppedBeforeAnyProgressWriteResumesWithARange(shutdown: Bool) async throws {
        try await withFixture { fx in
            let (d, data) = try await Self.slowSmallDownload(fx)
            #expect(try await d.record(id: "s")?.bytesReceived == 0)   // nothing recorded yet
            if shutdown { await d.shutdown() } else { try await d.pause(id: "s") }
            let kept = fx.partialLength("s.bin")
            let stopped = try await fx.database().record(id: "s")
            #expect(kept >= 100_000 && kept < 600_000 && stopped?.bytesReceived == kept)
            #expect(stopped?.etag != nil && stopped?.totalBytes == 600_000)
            let again = shutdown ? try fx.downloader(Self.noProgressWrites) : d
            try await Self.expectFinishedFromKept(fx, again, data, kept) {
                if shutdown { try await again.start() } else { try await again.resume(id: "s") }
            }
        }
    }

    /// The same for a hand-off to the system: the request it makes asks for the rest, with
    /// the reply's validators, and a take-back goes on from the kept bytes.
    @Test func aSmallDownloadHandedOffBeforeAnyProgressWriteAsksForTheRest() async throws {
        try await withFixture { fx in
            let (d, data) = try await Self.slowSmallDownload(fx)
            let request = try await d.handOff(id: "s")
            let kept = fx.partialLength("s.bin")
            #expect(kept >= 100_000 && request?.keptBytes == kept)
            let headers = Dictionary((request?.headers ?? []).map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
            #expect(headers["range"] == "bytes=\(kept)-" && headers["if-range"] != nil)
            try await Self.expectFinishedFromKept(fx, d, data, kept) { _ = try await d.takeBack(id: "s") }
        }
    }

    /// Another process cancels a small download while its bytes flow: its cancel deletes the
    /// partial (or, on Linux, finds none: the partial has no name yet, and the run takes back
    /// the file it puts in place when its completing write finds the record gone), neither a
    /// partial nor a final file is left, and the run ends cancelled (it ended failed,
    /// E_FNF_WRITE, before the finish asked why).
    @Test func aSmallDownloadCancelledByAnotherProcessLeavesNoFile() async throws {
        try await withFixture { fx in
            try fx.serve("c.bin", size: 600_000)
            // Stalled half way until the cancel is made: on a body left to flow for 1.5 s, a
            // test starved that long cancelled a completed download (seen once over URLSession
            // in CI; every time with a 2 s sleep before the cancel).
            var fault = Fault(); fault.bytesPerSecond = 400_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/c.bin")
            let running = try fx.downloader { $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(60) }
            let other = try fx.downloader()
            let ended = try await Self.startAndAwaitBytes(fx, running, id: "c", file: "c.bin")
            try await other.cancel(id: "c")
            fx.origin.endStalls()   // the rest flows in: the run ends after the cancel, whenever it is
            #expect(await ended.value == .cancelled)   // not a failure to rename: stopped by the other process
            #expect(!fx.exists("c.bin") && !fx.exists("c.bin.partial"))
            await running.shutdown(); await other.shutdown()
        }
    }

    /// A pause here after another process cancelled the download while it ran here: the
    /// pause says the download is not found, and its one final event says cancelled (the
    /// pause returned as if it had paused a download that no longer existed: found by the
    /// simulator, seed 2670219547). On the engine's clock, stopped: no heartbeat tells the
    /// run of the cancel first.
    @Test func aPauseAfterACancelElsewhereSaysNotFound() async throws {
        try await withFixture { fx in
            try fx.serve("g.bin", size: 3_000_000)
            var fault = Fault(); fault.stallAfterBytes = 1_000_000
            fx.origin.setFault(fault, for: "/g.bin")
            let d = try fx.downloader { $0.clock = ManualEngineClock(); $0.idleTimeout = .seconds(120) }
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "g") { if let end = e.end { return end } }; return nil }
            try await d.enqueue(DownloadRequest(id: "g", url: fx.url("g.bin"), destination: "g.bin"))
            #expect(try await eventually { fx.origin.requests.first?.bodyBytesSent == 1_000_000 })
            try await other.cancel(id: "g")
            #expect(await d.runningIDs == ["g"])   // it runs on, stalled, not knowing
            #expect(await errorCode { try await d.pause(id: "g") } == CourierError.Code.notFound.rawValue)
            #expect(await ended.value == .cancelled)
            #expect(!fx.exists("g.bin") && !fx.exists("g.bin.partial"))
            fx.origin.endStalls()
            await d.shutdown(); await other.shutdown()
        }
    }

    /// Another process cancels a download after its run put the file in place and before
    /// the run's completing write: the run finds the record gone and takes its file back, so
    /// a cancelled download leaves no file behind (it left the final file before).
    @Test func aCancelBetweenTheRenameAndTheCompletionLeavesNoFile() async throws {
        try await withFixture { fx in
            try fx.serve("r.bin", size: 300_000)
            // The window is on a clock the test moves after the cancel (4 s of the wall clock
            // could pass before a loaded machine cancels).
            let clock = ManualEngineClock()
            let d = try fx.downloader { $0.clock = clock; $0.pauseAfterRename = .seconds(4) }
            let other = try fx.downloader()
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "r") } }
            try await d.enqueue(DownloadRequest(id: "r", url: fx.url("r.bin"), destination: "r.bin"))
            let window = try await clock.nextWait(.testPause)
            #expect(fx.exists("r.bin"))   // renamed; the record not yet completed
            try await other.cancel(id: "r")
            clock.advance(to: window)
            #expect(await waiter.value == CourierError.Code.cancelled.rawValue)
            #expect(!fx.exists("r.bin") && !fx.exists("r.bin.partial"))
            #expect(try await fx.database().record(id: "r") == nil)
            await d.shutdown()
            await other.shutdown()
        }
    }

    /// The same in this process: a cancel that reaches the run after the file is in place
    /// lets the run complete the record (past its point of no return), then goes on as the
    /// cancel of a completed download: the record goes, the file stays, and the download's
    /// one final event says completed (it said cancelled, over a file left in place).
    @Test func aCancelInThisProcessAfterTheRenameEndsCompleted() async throws {
        try await withFixture { fx in
            let data = try fx.serve("r.bin", size: 300_000)
            let d = try fx.downloader { $0.clock = ManualEngineClock(); $0.pauseAfterRename = .seconds(30) }   // the cancel cuts it short
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "r") } }
            try await d.enqueue(DownloadRequest(id: "r", url: fx.url("r.bin"), destination: "r.bin"))
            #expect(try await eventually { fx.exists("r.bin") })
            try await d.cancel(id: "r")
            #expect(await waiter.value == nil)   // completed
            #expect(fx.finalData("r.bin") == data && !fx.exists("r.bin.partial"))
            #expect(try await fx.database().record(id: "r") == nil)
            await d.shutdown()
        }
    }

    /// Another process cancels a download while its run waits for the reply (claimed, no
    /// file yet, so the cancel deletes nothing); then the reply comes and the run creates
    /// its partial. When the run stops (the record is gone) it deletes that partial: with a
    /// completion hook (a small file named from the start) and for a file over 1 MiB.
    @Test(arguments: [true, false]) func aCancelElsewhereBeforeThePartialExistsLeavesNoPartial(hook: Bool) async throws {
        try await withFixture { fx in
            try fx.serve("w.bin", size: hook ? 300_000 : 3_000_000)
            // The head waits until the test lets it go (after the cancel), not for 3 s of a
            // clock a loaded machine can spend before the cancel.
            var fault = Fault(); fault.headerDelaySeconds = 3600; fault.bytesPerSecond = 2_000_000
            fx.origin.setFault(fault, for: "/w.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            if hook { try d.onCompletion(ofIDsWithPrefix: "w") { _, _ in } }
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "w") { if let end = e.end { return end } }; return nil }
            try await d.enqueue(DownloadRequest(id: "w", url: fx.url("w.bin"), destination: "w.bin"))
            #expect(try await eventually { try await fx.database().record(id: "w")?.state == .downloading })
            #expect(try await eventually { fx.origin.requests.count == 1 })   // the request is in; its head waits
            #expect(!fx.exists("w.bin.partial"))   // still waiting for the reply
            try await other.cancel(id: "w")
            fx.origin.endStalls()
            #expect(await ended.value == .cancelled)
            #expect(!fx.exists("w.bin") && !fx.exists("w.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }
}
