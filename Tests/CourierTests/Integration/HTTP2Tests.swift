import CourierAsyncHTTPClient
import CourierOrigin
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

    static func transport() -> AsyncHTTPClientTransport {
        AsyncHTTPClientTransport(trust: .additionalCA(pemFile: NginxServer.shared.certificate!))
    }

    /// A file of `size` pseudo-random bytes under a fresh folder nginx serves; its path
    /// prefix (`/f/<folder>/`) tells its requests apart in the log.
    static func serve(_ folder: String, _ name: String, size: Int, seed: UInt64) throws -> Data {
        let dir = NginxServer.shared.root.appendingPathComponent(folder)
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
            for i in 0..<120 { files["f\(i).bin"] = try Self.serve(folder, "f\(i).bin", size: 64 << 10, seed: UInt64(i + 1)) }
            let t = Self.transport()
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

    @Test func aSegmentedDownloadsRangesEachGetAConnection() async throws {
        try await withFixture { fx in
            let folder = "ranges-\(UUID().uuidString.prefix(8))"
            let data = try Self.serve(folder, "big.bin", size: 2 << 20, seed: 9)
            let t = Self.transport()
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
            let t = Self.transport()
            let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transport: t)
            try await d.enqueue(DownloadRequest(id: "gone", url: "\(nginx.base!)/f/nothing-\(UUID().uuidString).bin", destination: "gone.bin"))
            let code = await errorCode { try await d.waitForCompletion(id: "gone") }
            await d.shutdown()
            try await t.shutdown()
            #expect(code == "E_HTTP_4XX", "\(code ?? "none")")
            #expect(!fx.exists("gone.bin") && !fx.exists("gone.bin.partial"))
        }
    }

    /// A pause over HTTP/2 stops the stream and keeps what arrived; the resume asks for the
    /// rest by its `Range` (issue 45). The test's own origin behind nginx sends 1 MiB, at
    /// 512 KiB/s or at once, then stalls until the test lets it go: the body cannot end before
    /// the pause however starved the test is, and nginx ends (and logs) the request only when
    /// the client resets its stream, so a pause that left the stream open fails here by the
    /// wait, not by a window. (It ran alone as `HTTP2TimingTests`, on nginx's own rate limit,
    /// after failing twice in CI under load: a pause that kept 0 bytes while nginx sent the
    /// whole file, and a third request after 30 s.)
    @Test(arguments: [true, false]) func aPauseOverHTTP2StopsTheStreamAndKeepsWhatArrived(flowing: Bool) async throws {
        try await withFixture { fx in
            let data = try fx.serve("clip.bin", size: 3 << 20, seed: 77)
            var fault = Fault(); fault.stallAfterBytes = 1 << 20
            if flowing { fault.bytesPerSecond = 512 << 10 }
            fx.origin.setFault(fault, for: "/clip.bin")
            let url = try #require(nginx.proxied(fx.url("clip.bin")))
            let path = String(url.dropFirst(nginx.base!.count))
            let t = Self.transport()
            let d = Downloader(configuration: fx.configuration { $0.progressPersistInterval = .zero; $0.idleTimeout = .seconds(600) },
                               database: try fx.database(), transport: t)
            try await d.enqueue(DownloadRequest(id: "clip", url: url, destination: "clip.bin"))
            // A write on every chunk: flowing, paused past 256 KiB; stalled, at the stall.
            let before: Int64 = flowing ? 256 << 10 : 1 << 20
            #expect(try await eventually { (try await d.record(id: "clip")?.bytesReceived ?? 0) >= before })
            let pausedAt = ContinuousClock.now
            try await d.pause(id: "clip")
            let kept = try #require(try await d.record(id: "clip")).bytesReceived
            #expect(kept >= before && kept <= 1 << 20 && fx.partialLength("clip.bin") == kept)
            #expect(try await eventually { nginx.requests(path).count == 1 }, "the paused stream was not reset: \(nginx.requests(path))")
            print("HTTP2Tests: a pause over HTTP/2 (\(flowing ? "flowing" : "stalled")) ended nginx's stream \(ContinuousClock.now - pausedAt) after it was asked")
            fx.origin.setFault(nil, for: "/clip.bin")
            fx.origin.endStalls()   // the paused reply's handler ends too
            try await d.resume(id: "clip")
            try await d.waitForCompletion(id: "clip")
            await d.shutdown()
            try await t.shutdown()
            #expect(fx.finalData("clip.bin") == data)
            let logged = nginx.requests(path)
            #expect(logged.map(\.range) == ["-", "bytes=\(kept)-"] && logged.last?.status == 206, "\(logged.map(\.summary))")
            #expect(logged.allSatisfy { $0.proto == "HTTP/2.0" }, "\(logged.map(\.summary))")
        }
    }

    /// nginx sends a body in 8 KiB DATA frames; the frames one read delivers reach the
    /// engine joined (`HTTP2DataCoalescer`), in parts of at most 512 KiB, and whole.
    @Test func aLongBodyOverHTTP2ArrivesInJoinedParts() async throws {
        let folder = "joined-\(UUID().uuidString.prefix(8))"
        let data = try Self.serve(folder, "f.bin", size: 8 << 20, seed: 5)
        let (received, largest) = try await readInParts(Self.transport(), url: "\(nginx.base!)/f/\(folder)/f.bin")
        #expect(received == data)
        #expect(try await eventually(timeout: .seconds(10)) { !nginx.requests("/f/\(folder)/").isEmpty })   // nginx logs as the body ends
        #expect(nginx.requests("/f/\(folder)/").map(\.proto) == ["HTTP/2.0"])
        #expect(largest > 16 << 10, "the largest part was \(largest) bytes (an HTTP/2 frame is at most 16 KiB)")
        #expect(largest <= 512 << 10, "the largest part was \(largest) bytes")
    }
}
