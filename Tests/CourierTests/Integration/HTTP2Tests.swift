import CourierAsyncHTTPClient
import CourierTestSupport
import Foundation
import Testing
@testable import CourierCore

/// The engine over HTTP/2 (issue 30), against a real nginx with `http2 on` over TLS: many
/// files as streams of one connection, a download stopped and resumed by its `Range`, a
/// segmented download's ranges each on a connection of its own (HTTP/1.1), and an error
/// status with its code. nginx's own log says which protocol and connection each
/// request came on.
@Suite(.enabled(if: NginxServer.shared.isAvailable, "needs nginx (apt-get install -y nginx)"))
struct HTTP2Tests {
    let nginx = NginxServer.shared

    private func transport() -> AsyncHTTPClientTransport {
        AsyncHTTPClientTransport(trust: .additionalCA(pemFile: nginx.certificate!))
    }

    /// A file of `size` pseudo-random bytes under a fresh folder nginx serves; its path
    /// prefix (`/f/<folder>/`) tells its requests apart in the log.
    private func serve(_ folder: String, _ name: String, size: Int, seed: UInt64) throws -> Data {
        let dir = nginx.root.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var g = SplitMix(seed: seed)
        var data = Data(capacity: size + 8)
        while data.count < size { withUnsafeBytes(of: g.next()) { data.append(contentsOf: $0) } }
        data = data.prefix(size)
        try data.write(to: dir.appendingPathComponent(name))
        return data
    }

    @Test func manyFilesAreStreamsOfOneConnection() async throws {
        try await withFixture { fx in
            let folder = "many-\(UUID().uuidString.prefix(8))"
            var files: [String: Data] = [:]
            for i in 0..<120 { files["f\(i).bin"] = try serve(folder, "f\(i).bin", size: 64 << 10, seed: UInt64(i + 1)) }
            let t = transport()
            let d = Downloader(configuration: fx.configuration { $0.maxConcurrentDownloads = 8 }, database: try fx.database(), transport: t)
            _ = try await d.enqueue(batch: files.keys.sorted().map {
                DownloadRequest(id: $0, url: "\(nginx.base!)/f/\(folder)/\($0)", destination: "many/\($0)")
            })
            for name in files.keys { try await d.waitForCompletion(id: name) }
            await d.shutdown()
            try await t.shutdown()
            for (name, data) in files { #expect(fx.finalData("many/\(name)") == data, "\(name)") }
            let logged = nginx.requests("/f/\(folder)/")
            #expect(logged.count == files.count)
            #expect(logged.allSatisfy { $0.proto == "HTTP/2.0" && $0.status == 200 }, "\(Set(logged.map(\.proto)))")
            // Eight at once as streams: no handshake per file. The client may open a few
            // connections before the first one's ALPN answer is in (at most 8 per origin);
            // one of them then carries nearly all.
            let perConnection = Dictionary(grouping: logged, by: \.connection).mapValues(\.count)
            #expect(perConnection.count <= 8 && perConnection.values.max()! >= files.count * 9 / 10, "\(perConnection)")
        }
    }

    @Test func aStoppedDownloadResumesByItsRangeOverHTTP2() async throws {
        try await withFixture { fx in
            let folder = "resume-\(UUID().uuidString.prefix(8))"
            let data = try serve(folder, "clip.bin", size: 3 << 20, seed: 77)
            let url = "\(nginx.base!)/slow/\(folder)/clip.bin"   // 512 KiB/s: stopped part way
            let t = transport()
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

    @Test func aSegmentedDownloadsRangesEachGetAConnection() async throws {
        try await withFixture { fx in
            let folder = "ranges-\(UUID().uuidString.prefix(8))"
            let data = try serve(folder, "big.bin", size: 2 << 20, seed: 9)
            let t = transport()
            let d = Downloader(configuration: fx.configuration { $0.minSegmentSize = 256 << 10 }, database: try fx.database(), transport: t)
            // 512 KiB/s per request: the ranges overlap in time however loaded the machine is, so
            // none can finish and hand its connection to the next.
            try await d.enqueue(DownloadRequest(id: "big", url: "\(nginx.base!)/slow/\(folder)/big.bin", destination: "big.bin", connections: 4))
            try await d.waitForCompletion(id: "big")
            await d.shutdown()
            try await t.shutdown()
            #expect(fx.finalData("big.bin") == data)
            let ranges = nginx.requests("/slow/\(folder)/").filter { $0.range != "-" && $0.range != "bytes=0-" }
            #expect(ranges.count >= 3, "\(nginx.requests("/slow/\(folder)/"))")
            #expect(ranges.allSatisfy { $0.proto == "HTTP/1.1" }, "\(ranges)")
            // The three ranges beside the first request's run at once, each on its own
            // connection (a split-off range may reuse one a finished range freed).
            #expect(Set(ranges.map(\.connection)).count >= 3, "each range its own connection: \(ranges)")
        }
    }

    @Test func anErrorStatusOverHTTP2KeepsItsCode() async throws {
        try await withFixture { fx in
            let t = transport()
            let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transport: t)
            try await d.enqueue(DownloadRequest(id: "gone", url: "\(nginx.base!)/f/nothing-\(UUID().uuidString).bin", destination: "gone.bin"))
            let code = await errorCode { try await d.waitForCompletion(id: "gone") }
            await d.shutdown()
            try await t.shutdown()
            #expect(code == "E_HTTP_4XX", "\(code ?? "none")")
            #expect(!fx.exists("gone.bin") && !fx.exists("gone.bin.partial"))
        }
    }
}
