import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

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
            let d = try fx.downloader { $0.idleTimeout = .seconds(60) }
            let events = d.events(for: "s")
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            let stalledShown = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for await event in events {
                        if case let .progress(p) = event, p.bytesReceived == 1 << 20 { return true }
                    }
                    return false
                }
                group.addTask { try? await Task.sleep(for: .seconds(10)); return false }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(stalledShown)
            try await d.cancel(id: "s")
            await d.shutdown()
        }
    }
}
