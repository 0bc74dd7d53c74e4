import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// Issue 7's randomized fault matrix: downloads through faults combined per request from a
/// seeded generator. Each must end completed with the right bytes, or failed with a code;
/// never a final file with wrong bytes, never a lost partial that a later attempt needed.
/// The seed is printed; set COURIER_FAULT_SEED to replay, COURIER_FAULT_ROUNDS for more.
///
/// Liveness (issue 45): every download ends within a bound of requests that follows from
/// the policy (at most `maxAttempts` in a row without net progress, each net progress at
/// least `minimumProgress` or the rest of the file, a new count after each restart), and
/// within a wall-clock bound, so a retry loop that never ends fails here with its seed
/// (seed 686656063's m289 once made 15,900 requests and never ended).
@Suite(.serialized) struct FaultMatrixTests {
    @Test func randomFaultsNeverYieldAWrongFile() async throws {
        let env = ProcessInfo.processInfo.environment
        let seed = env["COURIER_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let rounds = env["COURIER_FAULT_ROUNDS"].flatMap { Int($0) } ?? 500
        print("fault matrix: seed \(seed), \(rounds) downloads (replay with COURIER_FAULT_SEED=\(seed))")
        var rng = SplitMix(seed: seed)
        try await withFixture { fx in
            // A few files of different sizes; one changes version mid-run.
            var files: [String: Data] = [:]
            for (i, size) in [40_000, 200_000, 700_000, 1_500_000].enumerated() {
                files["f\(i).bin"] = try fx.serve("f\(i).bin", size: size, seed: UInt64(i + 1))
            }
            let policy = RetryPolicy(baseDelay: .milliseconds(5), maxDelay: .milliseconds(40), maxAttempts: 6, maxRetryAfter: .milliseconds(50))
            let d = try fx.downloader {
                $0.maxConcurrentDownloads = 8
                $0.idleTimeout = .milliseconds(300)
                $0.retryPolicy = policy
                $0.maxRestarts = 6
            }
            var completed = 0, failed: [String: Int] = [:], mostRequests = (id: "", count: 0)
            var batch: [(id: String, file: String, path: String)] = []
            func settle() async throws {
                for (id, file, path) in batch {
                    defer {
                        // Each request is one attempt (or a redirect-free retry of one): bounded
                        // by the rules, whatever the fault.
                        let requests = fx.origin.requests.filter { $0.path == path }.count
                        let size = Int64(files[file]!.count)
                        let bound = Int((size / policy.minimumProgress + 2)) * policy.maxAttempts * (6 + 1) + 7
                        #expect(requests <= bound, "seed \(seed): \(id) made \(requests) requests, over the liveness bound of \(bound)")
                        if requests > mostRequests.count { mostRequests = (id, requests) }
                    }
                    do {
                        let record = try await Self.ending(of: id, in: d, within: .seconds(180), seed: seed)
                        let bytes = fx.finalData(record.localFinalPath)
                        #expect(bytes == files[file], "seed \(seed): \(id) completed with wrong bytes (\(bytes?.count ?? -1) of \(files[file]!.count))")
                        completed += 1
                    } catch is DidNotEnd {
                        continue   // recorded, with the seed, by ending(of:)
                    } catch let e as CourierError {
                        failed[e.code.rawValue, default: 0] += 1
                        let record = try await d.record(id: id)
                        #expect(record?.state == .failed, "seed \(seed): \(id) ended \(String(describing: record?.state)) with \(e)")
                        #expect(!fx.exists(record?.localFinalPath ?? "-"), "seed \(seed): \(id) failed but left a final file")
                    }
                }
                batch.removeAll()
            }
            for round in 0..<rounds {
                let file = "f\(Int(rng.next() % 4)).bin"
                var fault = Fault()
                // Misbehave on the first 1–3 requests; one round in ten, on every request.
                fault.times = rng.next() % 10 == 0 ? 0 : Int(rng.next() % 3) + 1
                switch rng.next() % 12 {
                case 0: fault.dropAfterBytes = Int64(rng.next() % 300_000)
                case 1: fault.ignoreRange = true; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                case 2: fault.weakETag = true; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                case 3: fault.gzip = true; if rng.next() % 2 == 0 { fault.dropAfterBytes = Int64(rng.next() % 100_000) }
                case 4: fault.contentRangeShift = Int64(rng.next() % 5000) + 1; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                case 5: fault.contentRangeTotal = Int64(rng.next() % 3_000_000) + 1
                case 6: fault.contentLengthDelta = Int64(rng.next() % 2000) + 1
                case 7: fault.failStatus = [500, 502, 503, 504, 429, 408][Int(rng.next() % 6)]; fault.failCount = Int(rng.next() % 4) + 1; fault.retryAfter = 0
                case 8: if rng.next() % 4 == 0 { fault.stallAfterBytes = 128_000 + Int64(rng.next() % 256_000) } else { fault.dropAfterBytes = 0 }
                case 9: fault.alignRangeStart = 4096; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                case 10: fault.noValidators = true; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                default: fault.changeETag = true; fault.dropAfterBytes = Int64(rng.next() % 300_000)
                }
                let path = "/r\(round)/\(file)"
                fx.origin.setFault(fault, for: path)
                try linkFile(fx, round: round, file: file)
                let id = "m\(round)"
                try await d.enqueue(DownloadRequest(id: id, url: fx.url("r\(round)/\(file)"), destination: "out/\(id).bin",
                                                    sha256: rng.next() % 3 == 0 ? Fixture.sha256(files[file]!) : nil))
                batch.append((id, file, path))
                if batch.count == 16 { try await settle() }
            }
            try await settle()
            await d.shutdown()
            print("fault matrix: seed \(seed): \(completed) completed with the right bytes, failed by code: \(failed.sorted { $0.key < $1.key }); "
                  + "most requests: \(mostRequests.count) (\(mostRequests.id))")
            #expect(completed + failed.values.reduce(0, +) == rounds)
            #expect(completed > rounds / 2, "seed \(seed): most downloads should get through faults limited to their first requests")
            #expect(!failed.isEmpty || rounds < 50, "seed \(seed): permanent faults should make some downloads fail")
        }
    }

    /// The download's end, or a recorded failure (and the download cancelled, so the run goes
    /// on) when it has not ended within `limit`: a livelock fails with its seed, never hangs.
    static func ending(of id: String, in d: Downloader, within limit: Duration, seed: UInt64) async throws -> DownloadRecord {
        try await withThrowingTaskGroup(of: DownloadRecord?.self) { group in
            group.addTask { try await d.waitForCompletion(id: id) }
            group.addTask { try await Task.sleep(for: limit); return nil }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let record = first else {
                Issue.record("seed \(seed): \(id) did not end within \(limit): a retry loop without end")
                try? await d.cancel(id: id)
                throw DidNotEnd()
            }
            return record
        }
    }

    struct DidNotEnd: Error {}

    /// Serves the same bytes under a per-round path, so each round has its own fault.
    private func linkFile(_ fx: Fixture, round: Int, file: String) throws {
        let dir = fx.served.appendingPathComponent("r\(round)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.linkItem(at: fx.served.appendingPathComponent(file), to: dir.appendingPathComponent(file))
    }
}
