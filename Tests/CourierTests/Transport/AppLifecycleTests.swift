import CourierOrigin
import Foundation
import Testing
@testable import CourierCore
@_spi(Testing) import CourierURLSession

/// The one launch entry point (issue 26), on Linux: URLSession download tasks of the default
/// configuration stand in for the background session, as in `BackgroundHandOffTests`.
@Suite(.serialized) struct AppLifecycleTests {
    static let size = 8 << 20

    /// A download that stalls at half, then handed to a task whose reply hangs.
    private func handedOff(_ fx: Fixture, _ lifecycle: AppLifecycle, phase: AppLifecycle.Phase) async throws -> Data {
        let data = try fx.serve("f.bin", size: Self.size)
        var fault = Fault(); fault.stallAfterBytes = Int64(Self.size / 2); fault.times = 1
        fx.origin.setFault(fault, for: "/f.bin")
        try await lifecycle.downloader.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        #expect(try await eventually { fx.partialLength("f.bin") >= 2 << 20 })
        var hang = Fault(); hang.stallAfterBytes = 1; hang.times = 1
        fx.origin.setFault(hang, for: "/f.bin")
        await lifecycle.sceneDidChange(to: phase)
        #expect(try await lifecycle.downloader.record(id: "x")?.state == .handedOff)
        #expect(try await eventually { fx.origin.requests.count == 2 })   // the task's request is at the origin, hanging
        return data
    }

    @Test func theHandOffPhaseHandsOffAndActiveTakesBack() async throws {
        #expect(AppLifecycle.handOffPhase == .inactive)
        try await withFixture { fx in
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let lifecycle = AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.lifecycle")
            let data = try await handedOff(fx, lifecycle, phase: AppLifecycle.handOffPhase)
            await lifecycle.sceneDidChange(to: .background)   // a second call hands off nothing more
            await lifecycle.sceneDidChange(to: .active)
            let record = try await d.waitForCompletion(id: "x")
            #expect(record.state == .completed && fx.finalData("f.bin") == data)
            lifecycle.background?.invalidate()
            await d.shutdown()
        }
    }

    /// A process that died while its downloads were with the system: the next launch gives
    /// back what the system lost and resumes it, through the one call.
    @Test func launchRecoversWhatAKilledProcessHandedOffAndResumes() async throws {
        try await withFixture { fx in
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let first = AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.lifecycle")
            let data = try await handedOff(fx, first, phase: .background)
            // The process is gone, its tasks with it (Linux): a dead process acts on no
            // event, so the cancelled task gives nothing back (a late give-back to `d` would
            // requeue "x" after the next launch looked for it).
            first.background?.actsOnEvents = false
            first.background?.invalidate()
            await d.shutdown()

            let again = try fx.downloader()
            let second = AppLifecycle(downloader: again, backgroundSessionIdentifier: "courier.tests.lifecycle")
            try await second.launch()
            let record = try await again.waitForCompletion(id: "x")
            #expect(record.state == .completed && fx.finalData("f.bin") == data)
            #expect(second.handleEvents(forBackgroundURLSession: "courier.tests.lifecycle") {})
            #expect(!second.handleEvents(forBackgroundURLSession: "another.session") {})
            second.background?.invalidate()
            await again.shutdown()
        }
    }

    @Test func withoutABackgroundSessionPhasesChangeNothing() async throws {
        try await withFixture { fx in
            try fx.serve("s.bin", size: 100_000)
            let d = try fx.downloader()
            let lifecycle = AppLifecycle(downloader: d, background: nil)
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            await lifecycle.sceneDidChange(to: .inactive)
            #expect(try await d.waitForCompletion(id: "s").state == .completed)
            #expect(!lifecycle.handleEvents(forBackgroundURLSession: "any") {})
            await d.shutdown()
        }
    }
}
