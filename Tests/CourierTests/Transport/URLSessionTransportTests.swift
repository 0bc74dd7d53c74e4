import Courier
import CourierOrigin
import Foundation
import Testing
@testable import CourierURLSession

/// What only the URLSession transport does: hold back a fast network for a slow reader,
/// hand redirects back, map the session's errors.
@Suite(.serialized) struct URLSessionTransportTests {
    @Test func aSlowReaderGetsEveryByteInOrder() async throws {
        try await withFixture { fx in
            let data = try fx.serve("big.bin", size: 48 << 20)
            let transport = URLSessionTransport(bufferLimit: 1 << 20)
            let response = try await transport.send(try TransportRequest(url: fx.url("big.bin"), headers: [("Accept-Encoding", "identity")]))
            #expect(response.status == 200)
            var received = 0
            var hasher = Data()
            var first = true
            for try await buffer in response.body {
                if first { first = false; _ = await fx.origin.waitForRequests { ($0.first?.bodyBytesSent ?? 0) >= 1 << 20 } }   // the network runs ahead meanwhile
                received += buffer.count
                if hasher.count < 4096 { buffer.withUnsafeBytes { hasher.append(contentsOf: $0.prefix(4096 - hasher.count)) } }
                if received % (8 << 20) < buffer.count { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(received == data.count && hasher == data.prefix(4096))
            // Held at most the limit plus what arrives while the suspension takes effect:
            // never the body (48 MiB).
            let held = transport.bufferHighWater.withLock { $0 }
            #if canImport(FoundationNetworking)
            // FoundationNetworking keeps reading a suspended task (the article "Background transfers and the two HTTP stacks": a known limit of
            // Linux's URLSession); only the bytes and their order are checked here.
            _ = held
            #else
            // Apple's URLSession sends no traffic for a suspended task: held at most the limit
            // plus what arrives while the suspension takes effect, never the body.
            #expect(held <= 8 << 20, "held \(held) bytes")
            #endif
            try await transport.shutdown()
        }
    }

    @Test func redirectsAreHandedBackAndErrorsMapped() async throws {
        try await withFixture { fx in
            _ = try fx.serve("f.bin", size: 1000)
            var redirect = Fault(); redirect.redirectTo = "/f.bin"; redirect.redirectStatus = 301
            fx.origin.setFault(redirect, for: "/old.bin")
            let transport = URLSessionTransport()
            let reply = try await transport.send(TransportRequest(url: fx.url("old.bin")))
            #expect(reply.status == 301 && reply.headerFields.first(name: "Location")?.hasSuffix("/f.bin") == true)
            await reply.body.drain()
            let port = closedLoopbackPort()
            #expect(await errorCode { _ = try await transport.send(TransportRequest(url: "http://127.0.0.1:\(port)/x")) } == "E_CONNECTION_REFUSED")
            try await transport.shutdown()
        }
    }

    /// A compressed reply's decoded limit is `ratio` × its `Content-Length`: a hostile length
    /// (10^17, 100 × that is past Int64) is a large limit, not a crash.
    @Test func aHugeContentLengthOnACompressedReplyIsNotACrash() async throws {
        #expect(BodyStream.decodedLimit(encodedLength: 1_000, ratio: 100) == 100_000)
        #expect(BodyStream.decodedLimit(encodedLength: 0, ratio: 100) == 100)
        #expect(BodyStream.decodedLimit(encodedLength: -5, ratio: 100) == 100)
        #expect(BodyStream.decodedLimit(encodedLength: 100_000_000_000_000_000, ratio: 100) == .max)
        #expect(BodyStream.decodedLimit(encodedLength: .max, ratio: 100) == .max)
        try await withFixture { fx in
            _ = try fx.serve("z.bin", size: 1000)
            var fault = Fault(); fault.contentEncoding = "gzip"; fault.contentLengthDelta = 100_000_000_000_000_000
            fx.origin.setFault(fault, for: "/z.bin")
            let transport = URLSessionTransport()
            if let reply = try? await transport.send(TransportRequest(url: fx.url("z.bin"))) {   // libcurl may refuse the reply: either way, no crash
                await reply.body.drain()
            }
            try await transport.shutdown()
        }
    }
}
