import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// Every way a download's run ends sends exactly one final event, `.ended`, saying why,
/// and the per-download stream ends with it: the one thing waiters and watchers rely on.
@Suite struct FinalEventTests {
    /// Collects a download's events until its stream ends.
    private static func collect(_ stream: AsyncStream<DownloadEvent>) -> Task<[DownloadEvent], Never> {
        Task { var all: [DownloadEvent] = []; for await e in stream { all.append(e) }; return all }
    }

    private static func ends(_ events: [DownloadEvent]) -> [DownloadEnd] { events.compactMap(\.end) }

    private static func stall(_ fx: Fixture, _ name: String) {
        var fault = Fault(); fault.stallAfterBytes = 200_000
        fx.origin.setFault(fault, for: "/" + name)
    }

    @Test func pauseCancelAndShutdownEachEndTheStreamOnce() async throws {
        try await withFixture { fx in
            for name in ["p.bin", "c.bin", "s.bin", "w.bin"] { try fx.serve(name, size: 1 << 20); Self.stall(fx, name) }
            let d = try fx.downloader { $0.maxConcurrentDownloads = 3; $0.idleTimeout = .seconds(120) }
            var streams: [String: Task<[DownloadEvent], Never>] = [:]
            for id in ["p", "c", "s", "w"] {
                try await d.enqueue(DownloadRequest(id: id, url: fx.url("\(id).bin"), destination: "\(id).bin", priority: id == "w" ? -1 : 0))
                streams[id] = Self.collect(d.events(for: id))
            }
            #expect(try await eventually { await d.runningIDs == ["p", "c", "s"] })
            try await d.pause(id: "p")
            try await d.cancel(id: "c")
            // "w" waits behind "s" when the downloader shuts down: it ends too, queued.
            await d.shutdown()
            #expect(Self.ends(await streams["p"]!.value) == [.paused(nil)])
            #expect(Self.ends(await streams["c"]!.value) == [.cancelled])
            #expect(Self.ends(await streams["s"]!.value) == [.shutDown])
            #expect(Self.ends(await streams["w"]!.value) == [.shutDown])
            let db = try fx.database()
            #expect(try await db.record(id: "s")?.state == .queued)
            #expect(try await db.record(id: "p")?.state == .paused)
        }
    }

    @Test func aDownloadAnotherProcessTookEndsLeftToIt() async throws {
        try await withFixture { fx in
            for name in ["x.bin", "y.bin"] { try fx.serve(name, size: 1 << 20); Self.stall(fx, name) }
            let mine = try fx.downloader { $0.maxConcurrentDownloads = 1; $0.idleTimeout = .seconds(120) }
            let other = try fx.downloader { $0.leaseDuration = .seconds(30); $0.idleTimeout = .seconds(120) }
            // "x" waits here behind "y"; meanwhile the other process takes it and runs it.
            try await mine.enqueue(DownloadRequest(id: "y", url: fx.url("y.bin"), destination: "y.bin", priority: 1))
            try await mine.enqueue(DownloadRequest(id: "x", url: fx.url("x.bin"), destination: "x.bin"))
            let stream = Self.collect(mine.events(for: "x"))
            #expect(try await eventually { await mine.runningIDs == ["y"] })
            try await other.enqueue(DownloadRequest(id: "x", url: fx.url("x.bin"), destination: "x.bin"))
            #expect(try await eventually { try await fx.database().record(id: "x")?.leaseOwner == other.leaseOwner.id })
            // "y" pauses: "x"'s turn comes here, its claim is refused, and it ends left to the other.
            try await mine.pause(id: "y")
            let ends = Self.ends(await stream.value)
            #expect(ends.count == 1)
            guard case let .leftToAnotherProcess(error)? = ends.first else { Issue.record("\(ends)"); return }
            #expect(error.code == .leased)
            await #expect { try await mine.waitForCompletion(id: "y") } throws: { ($0 as? CourierError)?.code == .paused }
            await mine.shutdown()
            await other.shutdown()
        }
    }

    /// The all-downloads stream, replaying what is stored first (issue 26): a screen that
    /// starts from it shows each stored bar, then live events, in that order.
    @Test func theWholeStreamCanStartFromWhatIsStored() async throws {
        try await withFixture { fx in
            try fx.serve("done.bin", size: 10_000)
            try fx.serve("next.bin", size: 10_000)
            let first = try fx.downloader()
            try await first.fetchKeepingRecord(DownloadRequest(id: "done", url: fx.url("done.bin"), destination: "done.bin"))
            await first.shutdown()

            let d = try fx.downloader()
            var events = d.events(replayingStored: true).makeAsyncIterator()
            let one = await events.next(), two = await events.next()
            #expect(one?.id == "done")
            if case let .progress(p)? = one { #expect(p.bytesReceived == 10_000) } else { Issue.record("no stored progress first") }
            if case .ended(_, .completed)? = two {} else { Issue.record("no stored end second: \(String(describing: two))") }
            try await d.enqueue(DownloadRequest(id: "next", url: fx.url("next.bin"), destination: "next.bin"))
            let live = await events.next()
            #expect(live?.id == "next")
            _ = try await d.waitForCompletion(id: "next")
            await d.shutdown()
        }
    }
}
