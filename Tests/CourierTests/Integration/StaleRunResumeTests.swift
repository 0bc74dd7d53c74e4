import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierCore

/// A resume here of a download another process stopped while this process's run has not
/// seen it yet (its heartbeat is minutes away): the run is stopped, writing nothing, and the
/// download resumed; before, the resume returned as if the download were running and it
/// stayed paused or failed (the simulator's seed 3584678707 found the paused case; a review
/// the failed one).
@Suite struct StaleRunResumeTests {
    @Test(arguments: ["paused", "failed"])
    func aResumeOverARunThatHasNotSeenAStopElsewhereIsNotDropped(_ how: String) async throws {
        try await withFixture { fx in
            let data = try fx.serve("s.bin", size: 3_000_000)
            var stall = Fault()
            stall.stallAfterBytes = 1_200_000
            stall.stallSeconds = 300
            fx.origin.setFault(stall, for: "/s.bin")
            let here = try fx.downloader { $0.leaseDuration = .seconds(600); $0.idleTimeout = .seconds(600) }
            let elsewhere = try fx.downloader()
            try await here.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            // The run is live here and stalled: the origin sent every byte up to its stall. (Not
            // the partial's length: under a loaded parallel pass the disk writes behind lagged
            // for over a minute once, and the property does not depend on them.)
            #expect(try await eventually { fx.origin.requests.contains { $0.path == "/s.bin" && $0.bodyBytesSent >= 1_200_000 } })
            if how == "paused" {
                try await elsewhere.pause(id: "s")
            } else {
                // Failed by another process (one that took the lease over, say).
                _ = try await elsewhere.database.update(id: "s", ifStateIn: [.downloading]) { $0.fail(CourierError(.network, "failed elsewhere"), keeping: nil) }
            }
            #expect(await here.runningIDs == ["s"], "this process's run has not seen it")
            fx.origin.setFault(Fault(), for: "/s.bin")
            try await here.resume(id: "s")
            #expect(try await here.waitForCompletion(id: "s").state == .completed)
            #expect(try Data(contentsOf: fx.root.appendingPathComponent("s.bin")) == data)
            await here.shutdown()
            await elsewhere.shutdown()
        }
    }
}
