import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// A scripted interleaving under the simulator: `handOff(id:)` of a queued download right
/// after a relaunch's `start()`, while the queue's first page is still being read (the race
/// class of the pause found by seed 694705205, for the hand-off). Each seed orders the
/// steps of the page and of the hand-off differently; in none may the page's run go on
/// over the handed-off record, ask the server for it, or end the download's events (the
/// hand-off's adoption ends them).
@Suite struct HandOffSimulationTests {
    struct World: Sendable {
        var violations: [String] = []
    }

    static func world(seed: UInt64, directory: URL, clock: ManualEngineClock) async -> World {
        var world = World()
        let trace = SimulationScenario.Trace(clock: clock)
        let server = SimulatedServer(seed: seed, clock: clock, faultRate: 0, partEvery: .milliseconds(10), trace: trace)
        let ended = Locked<[String]>([])
        do {
            let database = try CourierDatabase(writer: try SimulationScenario.freshDatabase())
            var configuration = DownloaderConfiguration(rootDirectory: directory)
            configuration.clock = clock
            configuration.freeSpaceReserve = 0
            configuration.eventTap = { event in
                if case let .ended(id, end) = event { ended.withLock { $0.append("\(id) \(end)") } }
            }
            // Sizes that take both paths: a small unnamed partial, a named one.
            server.serve("/f0.bin", size: seed % 2 == 0 ? 5_000 : 200_000)
            try await database.save(DownloadRecord(id: "d0", remoteUrl: "http://simulated/f0.bin", localFinalPath: "f0.bin", partialPath: "f0.bin.partial"))
            let downloader = Downloader(configuration: configuration, database: database, transport: SimulatedTransport(server: server))
            try await downloader.start()
            let handOff = try await downloader.handOff(id: "d0")
            let asked = server.log.count
            let runningAfter = await downloader.running["d0"] != nil
            try? await clock.sleep(for: .seconds(5), .simulatedNetwork)   // the world goes on; cancelled only with it
            let state = try await database.record(id: "d0")?.state
            if handOff == nil { world.violations.append("the hand-off was refused (record \(state.map { "\($0)" } ?? "gone"))") }
            if state != .handedOff { world.violations.append("the record is \(state.map { "\($0)" } ?? "gone"), not handed off") }
            if runningAfter { world.violations.append("a run of the download was still here when the hand-off returned") }
            if server.log.count > asked { world.violations.append("\(server.log.count - asked) request(s) after the hand-off returned") }
            if !ended.withLock({ $0 }).isEmpty { world.violations.append("the download's events ended: \(ended.withLock { $0 })") }
            await downloader.shutdown()
        } catch {
            world.violations.append("the world failed: \(error)")
        }
        return world
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] == nil, "no transport of its own: run once, in the first pass"))
    func aHandOffRightAfterStartIsNotOverruledByTheFirstPage() async {
        let seeds = (1...UInt64(400)).map { $0 }
        let runs = await SimulationExecutor.onThreads(seeds) { seed -> (SimulationExecutor.End, World?) in
            let folder = temporaryFolder("courier-handoff-sim-\(seed)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let clock = ManualEngineClock()
            return SimulationExecutor.simulateHere(seed: seed, clock: clock) { await Self.world(seed: seed, directory: folder, clock: clock) }
        }
        let failing = runs.filter { $0.1.0 != .finished || !($0.1.1?.violations.isEmpty ?? false) }
        #expect(failing.isEmpty, "\(failing.count) of \(seeds.count) seeds: \(failing.prefix(3).map { "seed \($0.0): \($0.1.0), \($0.1.1?.violations ?? [])" })")
    }
}
