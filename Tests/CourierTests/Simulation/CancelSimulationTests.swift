import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// A scripted interleaving under the simulator: `cancel(id:)` of a queued download right
/// after a relaunch's `start()`, while the queue's pages are still being read (seed
/// 2266592348's race, and the next page's, which a review found). Each seed orders the steps
/// of the pages and of the cancel differently; in none may a run of the download ask the
/// server for it after the cancel returned, be left running, or leave its record behind.
@Suite struct CancelSimulationTests {
    static func violations(seed: UInt64, directory: URL, clock: ManualEngineClock) async -> [String] {
        var found: [String] = []
        let trace = SimulationScenario.Trace(clock: clock)
        let server = SimulatedServer(seed: seed, clock: clock, faultRate: 0, partEvery: .milliseconds(10), trace: trace)
        let ended = Locked<[String]>([])
        do {
            let database = try CourierDatabase(writer: try SimulationScenario.freshDatabase())
            var configuration = DownloaderConfiguration(rootDirectory: directory)
            configuration.clock = clock
            configuration.freeSpaceReserve = 0
            configuration.maxConcurrentDownloads = 2   // a page of two: the one beside it launches, and the next page is read at once
            configuration.eventTap = { event in
                if case let .ended(id, end) = event, id == "d0" { ended.withLock { $0.append("\(end)") } }
            }
            for i in 0..<2 {
                server.serve("/f\(i).bin", size: seed % 2 == 0 ? 5_000 : 200_000)
                try await database.save(DownloadRecord(id: "d\(i)", remoteUrl: "http://simulated/f\(i).bin", localFinalPath: "f\(i).bin", partialPath: "f\(i).bin.partial"))
            }
            let downloader = Downloader(configuration: configuration, database: database, transport: SimulatedTransport(server: server))
            try await downloader.start()
            try await downloader.cancel(id: "d0")
            let asked = server.log.filter { $0.path == "/f0.bin" }.count
            let runningAfter = await downloader.running["d0"] != nil
            try? await clock.sleep(for: .seconds(5), .simulatedNetwork)   // the world goes on; cancelled only with it
            let askedAfter = server.log.filter { $0.path == "/f0.bin" }.count - asked
            if runningAfter { found.append("a run of the download was still here when the cancel returned") }
            if askedAfter > 0 { found.append("\(askedAfter) request(s) after the cancel returned") }
            if let record = try await database.record(id: "d0") { found.append("the record is still there, \(record.state)") }
            if ended.withLock({ $0 }) != ["cancelled"] { found.append("the download's events ended \(ended.withLock { $0 }), not once cancelled") }
            await downloader.shutdown()
        } catch {
            found.append("the world failed: \(error)")
        }
        return found
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] == nil, "no transport of its own: run once, in the first pass"))
    func aCancelRightAfterStartIsNotOverruledByThePages() async {
        let seeds = (1...UInt64(400)).map { $0 }
        let runs = await SimulationExecutor.onThreads(seeds) { seed -> (SimulationExecutor.End, [String]?) in
            let folder = temporaryFolder("courier-cancel-sim-\(seed)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let clock = ManualEngineClock()
            return SimulationExecutor.simulateHere(seed: seed, clock: clock) { await Self.violations(seed: seed, directory: folder, clock: clock) }
        }
        let failing = runs.filter { $0.1.0 != .finished || !($0.1.1?.isEmpty ?? false) }
        #expect(failing.isEmpty, "\(failing.count) of \(seeds.count) seeds: \(failing.prefix(3).map { "seed \($0.0): \($0.1.0), \($0.1.1 ?? [])" })")
    }
}
