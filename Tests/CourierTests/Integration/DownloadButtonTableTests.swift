import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierCore

/// Seed 002's seven rules over engine records, from the table the media library's button
/// passes too (``ButtonCase``): each case built for real, judged, then pressed.
@Suite(.serialized) struct DownloadButtonTableTests {
    struct DoesNotOpen: Error {}

    @Test(arguments: ButtonCase.allCases)
    func theRulesOverRecords(_ kind: ButtonCase) async throws {
        try await withFixture { fx in try await check(kind, fx) }
    }

    private func check(_ kind: ButtonCase, _ fx: Fixture) async throws {
        do {
            let data = try fx.serve("v.mp4", size: 300_000)
            // A progress write on every chunk: an in-flight small download is named (and its
            // partial seen) with its first bytes, not only after a second of them.
            let d = try fx.downloader { $0.progressPersistInterval = .zero }
            let request = DownloadRequest(id: "video_1", url: fx.url("v.mp4"), destination: "videos/v.mp4")
            let file = fx.root.appendingPathComponent("videos/v.mp4")
            switch kind {
            case .noRecord: break
            case .completeOpens, .completeButMissing, .completeButDoesNotOpen:
                try await d.enqueue(request)
                _ = try await d.waitForCompletion(id: "video_1")
                if kind == .completeButMissing { try FileManager.default.removeItem(at: file) }
            case .inFlight, .paused:
                var slow = Fault(); slow.bytesPerSecond = 100_000; slow.stallAfterBytes = 200_000   // in flight until let go
                fx.origin.setFault(slow, for: "/v.mp4")
                try await d.enqueue(request)
                #expect(try await eventually { fx.partialLength("videos/v.mp4") > 0 })
                if kind == .paused { try await d.pause(id: "video_1") }
            case .failed:
                var missing = Fault(); missing.failStatus = 404
                fx.origin.setFault(missing, for: "/v.mp4")
                try await d.enqueue(request)
                #expect(try await eventually { try await d.record(id: "video_1")?.state == .failed })
            }
            let refuses: @Sendable (URL) throws -> Void = { _ in throw DoesNotOpen() }
            let opens: @Sendable (URL) throws -> Void = kind == .completeButDoesNotOpen ? refuses : DownloadButton.defaultOpen
            let button = DownloadButton(downloader: d, opens: opens)
            let verdict = DownloadButtonRules.decide(button.holding(try await d.record(id: "video_1")), opens: opens)
            #expect(ButtonCase.words(verdict) == kind.expected)
            if kind != .inFlight { fx.origin.setFault(nil, for: "/v.mp4"); fx.origin.endStalls() }
            let action = try await button.press(request)
            switch action {
            case let .open(opened):
                #expect(kind == .completeOpens && opened == file)
            case .error:
                #expect(kind == .completeButDoesNotOpen)
            case .inProgress:
                #expect(kind == .inFlight)
                fx.origin.setFault(nil, for: "/v.mp4")
                fx.origin.endStalls()
            case .downloadStarted:
                // Rule 7 cleaned up first: a fresh download from zero, to the right bytes.
                #expect([ButtonCase.noRecord, .completeButMissing, .paused, .failed].contains(kind))
                _ = try await d.waitForCompletion(id: "video_1")
                #expect(fx.finalData("videos/v.mp4") == data)
            }
            await d.shutdown()
        }
    }
}
