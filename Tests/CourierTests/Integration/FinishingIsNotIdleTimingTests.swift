import Foundation
import Testing
@_spi(Testing) @testable import CourierCore
import CourierOrigin

/// Issue 31, point 3: a download that failed with `E_TIMEOUT` while its final file existed.
/// The idle watchdog watched the finishing step too; a slow fsync and rename (a loaded disk)
/// outlasted the idle timeout, the attempt was aborted after the rename and before the
/// record was completed, and the retries that followed gave up with the file in place.
/// Here finishing outlasts the idle timeout on purpose (the test pause after the rename).
/// A `…TimingTests` suite: it runs alone (scripts/test), so the body itself is never idle
/// for the 1 s window on a loaded machine.
@Suite struct FinishingIsNotIdleTimingTests {
    @Test func finishingThatOutlastsTheIdleTimeoutCompletes() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 300_000)
        let d = try fx.downloader {
            $0.idleTimeout = .seconds(1)
            $0.pauseAfterRename = .seconds(3)
            $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(5), maxDelay: .milliseconds(20), maxAttempts: 2)
        }
        try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin"))
        let record = try await d.waitForCompletion(id: "f")
        #expect(record.state == .completed && fx.finalData("f.bin") == data)
        #expect(fx.origin.requests.count == 1, "finishing was aborted and the file fetched again")
        await d.shutdown()
    }
}
