import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// A scripted interleaving under the simulator: a download waits in this process's queue
/// behind another (one at a time), another process pauses it, and the app resumes it here
/// right as the one before ends and frees the slot, so the queue launches the waiting
/// download during the resume's own steps. Each seed orders those steps differently, at
/// one of eight moments around the slot's release. A resume that said done must leave the
/// download going: a run launched during the resume's read of the record found it paused
/// and ended paused while the resume returned as if it ran (a review), and one launched
/// after its check for a run was stopped by its requeue and the download left queued with
/// no run (seed 30000637). The queue is held from the resume's first step.
@Suite struct ResumeSimulationTests {
    static func world(seed: UInt64, directory: URL, clock: ManualEngineClock) async -> [String] {
        var violations: [String] = []
        let trace = SimulationScenario.Trace(clock: clock)
        let server = SimulatedServer(seed: seed, clock: clock, faultRate: 0, partEvery: .milliseconds(10), trace: trace)
        do {
            let database = try CourierDatabase(writer: try SimulationScenario.freshDatabase())
            var configuration = DownloaderConfiguration(rootDirectory: directory)
            configuration.clock = clock
            configuration.freeSpaceReserve = 0
            configuration.maxConcurrentDownloads = 1
            let wall = SimulatedProcess.wallClock(clock)
            configuration.leaseOwner = LeaseOwner.make(liveness: .system, wallClock: wall)
            var other = configuration
            other.leaseOwner = LeaseOwner.make(liveness: .system, wallClock: wall)
            server.serve("/f0.bin", size: 5_000)
            server.serve("/f1.bin", size: 5_000)
            let downloader = Downloader(configuration: configuration, database: database, transport: SimulatedTransport(server: server))
            let elsewhere = Downloader(configuration: other, database: database, transport: SimulatedTransport(server: server))
            let origin = clock.now
            _ = try await downloader.enqueue(DownloadRequest(id: "d1", url: "http://simulated/f1.bin", destination: "f1.bin"))
            _ = try await downloader.enqueue(DownloadRequest(id: "d0", url: "http://simulated/f0.bin", destination: "f0.bin"))
            try await elsewhere.pause(id: "d0")
            try? await clock.sleep(until: origin + .milliseconds(Int64(seed % 8) * 5), for: .simulatedNetwork)   // cancelled only with the world
            try await downloader.resume(id: "d0")
            try? await clock.sleep(for: .seconds(10), .simulatedNetwork)   // the world goes on; cancelled only with it
            for id in ["d0", "d1"] {
                let record = try await database.record(id: id)
                if record?.state != .completed {
                    violations.append("\(id) is \(record.map { "\($0.state)" } ?? "gone") \(record?.lastErrorCode ?? "") after the resume of d0 said done")
                }
            }
            await downloader.shutdown()
            await elsewhere.shutdown()
        } catch {
            violations.append("the world failed: \(error)")
        }
        return violations
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] == nil, "no transport of its own: run once, in the first pass"))
    func aResumeAsTheSlotFreesIsNotOverruledByTheLaunch() async {
        let seeds = (1...UInt64(400)).map { $0 }
        let runs = await SimulationExecutor.onThreads(seeds) { seed -> (SimulationExecutor.End, [String]?) in
            let folder = temporaryFolder("courier-resume-sim-\(seed)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let clock = ManualEngineClock()
            return SimulationExecutor.simulateHere(seed: seed, clock: clock) { await Self.world(seed: seed, directory: folder, clock: clock) }
        }
        let failing = runs.filter { $0.1.0 != .finished || !($0.1.1?.isEmpty ?? false) }
        #expect(failing.isEmpty, "\(failing.count) of \(seeds.count) seeds: \(failing.prefix(3).map { "seed \($0.0): \($0.1.0), \($0.1.1 ?? [])" })")
    }
}
