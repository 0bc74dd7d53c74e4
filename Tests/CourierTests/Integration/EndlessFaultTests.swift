import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// Issue 45 through the engine and the origin: a connection cut after a few bytes every
/// time, forever (the fault matrix's seed 686656063, m289: 69 bytes a connection of a
/// 1.5 MB file, which once made 15,900 requests and never ended). Every attempt keeps 69
/// more bytes, far short of the policy's 64 KiB of net progress: the download ends with its
/// code, in a number of requests the retry rules bound, over one connection and over
/// several (each range's budget outlives the run's attempts).
@Suite struct EndlessFaultTests {
    static let policy = RetryPolicy(baseDelay: .milliseconds(5), maxDelay: .milliseconds(20), maxAttempts: 3, maxRetryAfter: .milliseconds(20))

    @Test(arguments: [1, 4])
    func aConnectionCutAfterAFewBytesForeverEnds(connections: Int) async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 2 << 20)
            var fault = Fault(); fault.dropAfterBytes = 69   // every request, forever
            fx.origin.setFault(fault, for: "/f.bin")
            let d = try fx.downloader { $0.retryPolicy = Self.policy; $0.minSegmentSize = 256 << 10 }
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", connections: connections))
            await #expect(throws: CourierError.self) { try await d.waitForCompletion(id: "x") }
            let record = try #require(try await d.record(id: "x"))
            await d.shutdown()
            let requests = fx.origin.requests.count
            print("endless: a connection cut after 69 bytes, \(connections) connection(s): \(requests) requests, \(record.lastErrorCode ?? "-"): \(record.lastErrorMessage ?? "")")
            #expect(record.state == .failed && record.lastErrorCode == "E_NETWORK")
            #expect(record.lastErrorMessage?.contains("without progress") == true, "\(record.lastErrorMessage ?? "")")
            // One connection: maxAttempts requests. Several: each range's budget once
            // (maxAttempts requests a range), then one request a range for each later
            // attempt of the run, plus the first request that found the ranges.
            let bound = connections == 1 ? Self.policy.maxAttempts : 1 + connections * (2 * Self.policy.maxAttempts - 1)
            #expect(requests <= bound, "\(requests) requests, over \(bound)")
            #expect(!fx.exists("f.bin"))
        }
    }
}
