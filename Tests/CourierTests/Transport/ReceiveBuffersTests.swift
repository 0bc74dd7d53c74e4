import CourierAsyncHTTPClient
import Foundation
import Testing
@testable import CourierCore

/// The package's HTTP/1.1 connections read in buffers that grow past SwiftNIO's 64 KiB and
/// stop at 512 KiB (`ReceiveBuffers`; what it buys is in BENCHMARKS.md, never timed here).
/// What the engine sees of it: a long body arrives in parts larger than 64 KiB, none larger
/// than 512 KiB, and whole.
struct ReceiveBuffersTests {
    @Test func aLongBodyArrivesInPartsLargerThanSwiftNIOsDefaultAndNoLargerThanTheBound() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 16 << 20)
            let transport = AsyncHTTPClientTransport()
            var received = Data(), largest = 0
            do {
                let response = try await transport.send(TransportRequest(url: fx.url("f.bin"), timeout: .seconds(30)))
                for try await part in response.body {
                    // A reader slower than loopback, as the engine is while it writes: the
                    // socket fills, and the reads with it.
                    if received.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                    largest = max(largest, part.count)
                    part.withUnsafeBytes { received.append(contentsOf: $0) }
                }
            } catch { try await transport.shutdown(); throw error }
            try await transport.shutdown()
            #expect(received == data)
            #expect(largest > 64 << 10, "the largest part was \(largest) bytes")
            #expect(largest <= 512 << 10, "the largest part was \(largest) bytes")
        }
    }
}
