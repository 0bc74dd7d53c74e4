import CourierTestSupport
import Foundation
import Testing
@testable import CourierCore

/// A download paused and resumed over HTTP/2 against nginx (issue 30). It runs alone, after
/// the parallel suite (scripts/test runs the suites named `…TimingTests` so): under that
/// suite's load on two cores it failed twice in CI — once a third request after a 30 s
/// wait, once the pause did not stop the request (nginx sent the whole file in one 6 s
/// request) and the record kept 0 bytes. That is an open defect of pausing over HTTP/2
/// under load (issue 30's note), not a property of this test; alone it has not failed.
@Suite(.enabled(if: NginxServer.shared.isAvailable, "needs nginx (apt-get install -y nginx)"))
struct HTTP2TimingTests {
    let nginx = NginxServer.shared

    @Test func aStoppedDownloadResumesByItsRangeOverHTTP2() async throws {
        try await withFixture { fx in
            let folder = "resume-\(UUID().uuidString.prefix(8))"
            let data = try HTTP2Tests.serve(folder, "clip.bin", size: 3 << 20, seed: 77)
            let url = "\(nginx.base!)/slow/\(folder)/clip.bin"   // 512 KiB/s: stopped part way
            let t = HTTP2Tests.transport()
            let d = Downloader(configuration: fx.configuration { $0.progressPersistInterval = .milliseconds(100) }, database: try fx.database(), transport: t)
            let events = d.events()
            try await d.enqueue(DownloadRequest(id: "clip", url: url, destination: "clip.bin"))
            #expect(try await eventually { (try await d.record(id: "clip")?.bytesReceived ?? 0) >= 600_000 })
            try await d.pause(id: "clip")
            let kept = try #require(try await d.record(id: "clip")).bytesReceived
            let pausedAt = Date().timeIntervalSince1970
            try await d.resume(id: "clip")
            try await d.waitForCompletion(id: "clip")
            await d.shutdown()
            try await t.shutdown()
            #expect(fx.finalData("clip.bin") == data)
            var retried: [String] = []
            for await e in events { if case let .retrying(_, _, _, error, _) = e { retried.append("\(error.code.rawValue): \(error.message)") } }
            if !retried.isEmpty { print("HTTP2Tests: the paused download was retried: \(retried)") }
            let logged = nginx.requests("/slow/\(folder)/")
            #expect(Self.resumeProblems(logged, kept: kept, pausedAt: pausedAt, retried: retried) == nil)
        }
    }

    /// What is wrong with the requests of a download paused once at `kept` bytes: `nil`
    /// when the first came without a `Range`, the first after the pause asked for
    /// `bytes=<kept>-` and got 206, all over HTTP/2, none but the first from zero, and any
    /// request beyond those two is one the engine said it retried (it retries a stalled or
    /// failed attempt; it names each retry as an event). Returned as words so that a failed
    /// expectation shows nginx's log and the retries on its one line.
    private static func resumeProblems(_ logged: [NginxServer.Logged], kept: Int64, pausedAt: Double, retried: [String]) -> String? {
        let seen = "nginx logged \(logged.map(\.summary)), the engine retried \(retried), kept \(kept)"
        guard let first = logged.first, first.range == "-" else { return "the first request had a range: \(seen)" }
        guard let resumed = logged.first(where: { $0.started >= pausedAt - 0.001 }) else { return "no request after the pause: \(seen)" }
        if resumed.range != "bytes=\(kept)-" || resumed.status != 206 { return "the resume did not ask for the rest: \(seen)" }
        if !logged.allSatisfy({ $0.proto == "HTTP/2.0" }) { return "not all over HTTP/2: \(seen)" }
        if logged.dropFirst().contains(where: { $0.range == "-" || $0.range == "bytes=0-" }) { return "fetched from zero again: \(seen)" }
        if logged.count > 2 + retried.count { return "requests the engine did not retry: \(seen)" }
        return nil
    }
}
