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
            // From the origin itself in every pass: the reads in question are an HTTP/1.1 connection's.
            let (received, largest) = try await readInParts(AsyncHTTPClientTransport(), url: fx.origin.url("/f.bin"))
            #expect(received == data)
            #expect(largest > 64 << 10, "the largest part was \(largest) bytes")
            #expect(largest <= 512 << 10, "the largest part was \(largest) bytes")
        }
    }
}
