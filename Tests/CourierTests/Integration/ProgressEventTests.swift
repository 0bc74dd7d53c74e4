import Foundation
import Testing
@testable import CourierCore
import CourierOrigin
import CourierTestSupport

/// Progress events as a screen needs them (issue 26): a bar never freezes short of the bytes
/// held.
@Suite struct ProgressEventTests {
    /// A reply that sends a burst and then stalls: the last event says where it stalled
    /// (before, events came only with a chunk at least 100 ms after the last event, so a
    /// burst faster than that showed 0 for as long as the stall lasted).
    @Test func aBurstThenAStallShowsWhereItStalled() async throws {
        try await withFixture { fx in
            try fx.serve("s.bin", size: 4 << 20)
            var stall = Fault(); stall.stallAfterBytes = 1 << 20; stall.times = 1
            fx.origin.setFault(stall, for: "/s.bin")
            // On the engine's clock: the ticks that must show the stall come when the test
            // moves time, not within 10 s of a wall clock a loaded machine spent elsewhere
            // (it failed so in a fresh-clone CI run, 2026-11-29).
            let clock = ManualEngineClock()
            let transport = PullWatchingTransport(fx.transport() ?? Fixture.ownAsyncHTTPClientTransport())
            defer { Task { try? await transport.shutdown() } }   // the test is over: nothing waits for the client
            let d = Downloader(configuration: fx.configuration { $0.clock = clock; $0.idleTimeout = .seconds(60) }, database: try fx.database(), transport: transport)
            let seen = Locked<Int64>(0)
            let events = d.events(for: "s")
            let watching = Task {
                for await event in events { if case let .progress(p) = event { seen.withLock { $0 = max($0, p.bytesReceived) } } }
            }
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            #expect(await transport.waitForPull(after: 1 << 20))   // the burst is in the engine; the reply stalls
            // No chunk comes now: only the ticks (100 ms of the engine's time each, far inside
            // its 60 s idle window) can show where it stalled.
            var tick = try await clock.nextWait(.progressTick)
            while seen.withLock({ $0 }) < 1 << 20 {   // each tick published before the next one's wait
                clock.advance(to: tick)
                tick = try await clock.nextWait(.progressTick, after: tick)
            }
            watching.cancel()
            #expect(seen.withLock { $0 } == 1 << 20)
            try await d.cancel(id: "s")
            await d.shutdown()
        }
    }
}
