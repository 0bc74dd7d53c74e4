import CourierAsyncHTTPClient
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierCore

/// An HTTP/2 connection stays usable through what apps and servers do to it (issue 30; the
/// two ways AsyncHTTPClient 1.37 lost it, HTTP2ConnectionGuard): requests cancelled before
/// they go out, and a server resetting more streams than SwiftNIO's flood guard allows. Both
/// against a real nginx (`http2` on TLS), through the transport the engine uses. A test
/// that fails here fails by an error or a timeout of a request (each has a deadline).
/// The first fails without the guard (checked: `getConnectionFromPoolTimeout`). The second
/// did not, alone: there the requests went on after SwiftNIO's GOAWAY and only the client's
/// shutdown waited (75 s, until nginx closed the connection). What the guard changes for
/// the engine is shown by the fault matrix over HTTP/2 (scripts/test's third pass): 247 of
/// 500 downloads right without it, the rest E_TIMEOUT; 468–480 right with it. About 900
/// requests over TLS, in the parallel suite (issue 45). Moved into it on 2026-11-29 they
/// passed, but beside them the suite's own windows starved (tests of other suites took
/// 50–70 s where they take one; three failed by their counts) and they went back to run
/// alone; at most 24 tests at once (`scripts/test`), the parallel pass with them and a CPU
/// hog beside it took 146 s, 613 passed (2026-11-30). They use their own transport, so
/// the URLSession and HTTP/2 passes leave them out.
@Suite(.enabled(if: NginxServer.shared.isAvailable, "needs nginx (apt-get install -y nginx)"))
struct HTTP2ConnectionTests {
    let nginx = NginxServer.shared

    /// A user scrolling past thumbnails: 400 requests, each cancelled 0 to 0.4 ms after it
    /// was sent. Cancelled between the pool's lease and its head, a request cost the connection a
    /// stream for good; past the server's 128 the connection took no more requests.
    @Test func requestsCancelledAsTheyStartDoNotUseUpTheConnection() async throws {
        let folder = "cancelled-\(UUID().uuidString.prefix(8))"
        let data = try HTTP2Tests.serve(folder, "f.bin", size: 300_000, seed: 3)
        let url = "\(nginx.base!)/f/\(folder)/f.bin"
        let t = HTTP2Tests.transport()
        #expect(try await Self.fetch(url, over: t) == data)   // the connection is up: cancels meet requests in flight
        for round in 0..<50 {
            await withTaskGroup(of: Void.self) { group in
                for i in 0..<8 {
                    let request = Task {
                        let response = try await t.send(TransportRequest(url: url))
                        for try await _ in response.body {}
                    }
                    group.addTask {
                        try? await Task.sleep(nanoseconds: UInt64((round * 8 + i) % 4000) * 1000)   // only the delay; the cancel follows either way
                        request.cancel()
                        _ = await request.result
                    }
                }
            }
        }
        let bytes = try await Self.fetch(url, over: t)
        try await t.shutdown()
        #expect(bytes == data)
        let logged = nginx.requests("/f/\(folder)/")
        #expect(!logged.isEmpty && logged.allSatisfy { $0.proto == "HTTP/2.0" }, "\(Set(logged.map(\.proto)))")
    }

    /// nginx resets the stream of every request whose upstream drops mid-body; past 200 in
    /// 30 s SwiftNIO takes that for a flood, sends GOAWAY and drops the client's own resets,
    /// so streams stay open until none is left. The connection must be replaced instead.
    @Test func aServerResettingManyStreamsDoesNotTakeTheOriginDown() async throws {
        try await withFixture { fx in
            _ = try fx.serve("reset.bin", size: 200_000)
            let clean = try fx.serve("clean.bin", size: 200_000, seed: 5)
            fx.origin.setFault(Fault(query: ["drop": "2000"]), for: "/reset.bin")
            let reset = nginx.proxied(fx.origin.url("/reset.bin"))!
            let t = HTTP2Tests.transport()
            // Each request must fail, as the dropped connection it is.
            var codes: [String: Int] = [:]
            for _ in 0..<45 where codes["none"] == nil {
                await withTaskGroup(of: String.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            do { _ = try await Self.fetch(reset, over: t, timeout: .seconds(5)); return "none" } catch { return (error as? CourierError)?.code.rawValue ?? "\(error)" }
                        }
                    }
                    for await code in group { codes[code, default: 0] += 1 }
                }
            }
            #expect(codes["none"] == nil && codes["E_NETWORK", default: 0] >= 350, "every request to the resetting path fails as a dropped connection: \(codes)")
            // Then 160 downloads stopped after their first bytes (the client resets those
            // streams): on a connection SwiftNIO gave up on, these resets were dropped and the
            // streams stayed open until none was left for the next request.
            let cleanURL = nginx.proxied(fx.origin.url("/clean.bin"))!
            for _ in 0..<20 {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            guard let response = try? await t.send(TransportRequest(url: cleanURL, timeout: .seconds(5))) else { return }   // the last fetch says whether requests still go through
                            var chunks = response.body.makeAsyncIterator()
                            _ = try? await chunks.next()   // one chunk or an error: either way the stream is then given up
                        }
                    }
                }
            }
            let bytes = try await Self.fetch(cleanURL, over: t)
            try await t.shutdown()
            #expect(bytes == clean)
            let connections = Set(nginx.requests("/o/\(fx.origin.port)/reset.bin").map(\.connection))
            #expect(connections.count >= 2, "the connection SwiftNIO gave up on was replaced: \(connections)")
        }
    }

    /// The whole body of `url`, with a deadline: a connection that cannot take the request
    /// fails it instead of hanging the test.
    static func fetch(_ url: String, over t: AsyncHTTPClientTransport, timeout: Duration = .seconds(20)) async throws -> Data {
        let response = try await t.send(TransportRequest(url: url, timeout: timeout))
        var data = Data()
        for try await chunk in response.body { chunk.withUnsafeBytes { data.append(contentsOf: $0) } }
        return data
    }
}
