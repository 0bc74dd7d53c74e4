import CourierTestSupport
import Foundation
import GRDB
import Logging
@_spi(Testing) @testable import CourierCore

/// One seed's world (issue 46): the real `Downloader` (its scheduler, runs, lifecycle, idle
/// watchdog, ticker, lease heartbeat, completion and stops) over the ``SimulatedServer``, on
/// the engine's clock and the ``SimulationExecutor``, with an app that pauses, resumes and
/// cancels at moments drawn from the seed, itself or from another process (a second
/// downloader on the same database), and hands downloads off to the system's background
/// transfers (``SimulatedSystem``) and takes them back. It returns a trace of what happened (the same for
/// the same seed, byte for byte) and the invariants it found broken.
struct SimulationScenario {
    /// The outcome of one seed.
    struct Outcome: Sendable {
        var trace: [String] = []
        var violations: [String] = []
    }

    /// What the invariants read, in the one order the simulator ran it.
    enum Entry: Sendable {
        /// The app began (`done` false) or finished an action on a download.
        case app(id: String, action: String, done: Bool, ok: Bool)
        case downloading(id: String)
        /// The engine has the download again (resumed, or its hand-off ended).
        case queued(id: String)
        /// The app's process was suspended, and went on.
        case suspend, thaw
        case ended(id: String, DownloadEnd)
        case request(path: String)
    }

    /// A log written from the simulator's one thread, stamped with the engine's time.
    final class Trace: @unchecked Sendable { // only the simulator's thread writes
        private let lock = NSLock()
        private var lines: [String] = []
        private var entries: [Entry] = []
        let clock: ManualEngineClock
        private let origin: ContinuousClock.Instant
        init(clock: ManualEngineClock) { self.clock = clock; origin = clock.now }
        func add(_ line: String, _ entry: Entry? = nil) {
            let ms = (clock.now - origin).components
            let stamp = ms.seconds * 1000 + ms.attoseconds / 1_000_000_000_000_000
            lock.lock(); lines.append("\(stamp) \(line)"); if let entry { entries.append(entry) }; lock.unlock()
        }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        var journal: [Entry] { lock.lock(); defer { lock.unlock() }; return entries }
    }

    let seed: UInt64
    let directory: URL

    /// Runs the seed's world to its end (every download completed, failed or cancelled) and
    /// checks it. Call it through ``SimulationExecutor/simulateHere(seed:clock:maxSteps:maxTime:_:)``.
    func run(clock: ManualEngineClock) async -> Outcome {
        let trace = Trace(clock: clock)
        // A faulty disk from a seventh stream, in one world of four: full for a while, failing
        // syncs, or both; every task of the world's engine meets it.
        var disks = SplitMix(seed: seed ^ Self.disksStream)
        let faulty = disks.next() % 4 == 0 ? SimulatedDisk(&disks, clock: clock, trace: trace) : nil
        // Power cuts from a ninth stream, in one world of two with a kill: the kill cuts the
        // power (every process dies, the disk keeps what was synced, `DurableDisk`).
        var cuts = SplitMix(seed: seed ^ Self.cutsStream)
        let power = Self.killsAt(seed) != nil && cuts.next() % 2 == 0 && DurableDisk.canCut(directory) ? DurableDisk(root: directory, inner: faulty, draws: SplitMix(seed: cuts.next())) : nil
        guard let disk: any DiskFaults = power ?? faulty else { return await world(clock: clock, trace: trace, power: nil) }
        return await EngineExecutor.$current.withValue(EngineExecutor.current.with(disk: disk)) { await world(clock: clock, trace: trace, power: power) }
    }

    /// When the seed's world kills the app's process, if it does.
    static func killsAt(_ seed: UInt64) -> Duration? {
        var fates = SplitMix(seed: seed ^ Self.fatesStream)
        return fates.next() % 4 == 0 ? .milliseconds(Int64(fates.next() % 8000)) : nil
    }

    private func world(clock: ManualEngineClock, trace: Trace, power: DurableDisk?) async -> Outcome {
        var rng = SplitMix(seed: seed)
        // What the world added later draws from a stream of its own: the draws above stay
        // what they were, so the corpus's older seeds keep their worlds.
        var later = SplitMix(seed: seed ^ 0x5EED_0F_1A7E_0001)
        // Kills from a third: in one world of four the app's process is killed at a moment
        // drawn here and relaunched (the stream chosen so that no seed then in the corpus was one).
        let killAt = Self.killsAt(seed)
        // Hand-offs from a fourth: in one world of three the app hands downloads off to the
        // system's background transfers and takes them back, at moments of its other actions.
        var systems = SplitMix(seed: seed ^ Self.systemsStream)
        let handsOff = systems.next() % 3 == 0
        // Requests that fail before any reply (an HTTP/2 stream reset, a refused connection)
        // from a fifth, in one world of three.
        var resets = SplitMix(seed: seed ^ Self.resetsStream)
        let resetting = resets.next() % 3 == 0
        // Suspensions from a sixth: in one world of four without a kill, the app's process is
        // suspended (iOS suspends an app; a shell stops a `courier`) for 17 to 60 s, past its
        // leases' 15 s, and the other process resumes one of its downloads once they lapsed.
        var pauses = SplitMix(seed: seed ^ Self.suspendsStream)
        var suspension: (at: Duration, length: Duration, takeOver: Duration)?
        if killAt == nil, pauses.next() % 4 == 0 {
            let at = Duration.milliseconds(Int64(pauses.next() % 5000)), length = Duration.seconds(Int64(17 + pauses.next() % 44))
            suspension = (at, length, at + .seconds(16) + .milliseconds(Int64(pauses.next() % UInt64((length - .seconds(16)) / .milliseconds(1)))))
        }
        // Completion hooks from an eighth, in one world of four: every process completes every
        // download through the app's hook (its row written in the completing write), and one
        // call in five throws.
        var hooks = SplitMix(seed: seed ^ Self.hooksStream)
        let hooked = hooks.next() % 4 == 0
        let hookDraws = Locked(SplitMix(seed: hooks.next()))
        func register(_ downloader: Downloader) throws {
            guard hooked else { return }
            try downloader.onCompletion(ofIDsWithPrefix: "") { db, record in
                if hookDraws.withLock({ $0.next() % 5 == 0 }) {
                    trace.add("hook: \(record.id) throws")
                    throw CourierError(.unexpected, "the app's hook failed (simulated)")
                }
                try db.execute(sql: "INSERT OR REPLACE INTO app_files (id, etag) VALUES (?, ?)", arguments: [record.id, record.etag])
            }
        }
        let wall = SimulatedProcess.wallClock(clock)
        let server = SimulatedServer(seed: rng.next(), clock: clock, faultRate: [0.0, 0.2, 0.5][Int(rng.next() % 3)],
                                     partEvery: .milliseconds([10, 50, 200][Int(rng.next() % 3)]), trace: trace,
                                     quirks: resetting ? resets.next() : nil)
        var outcome = Outcome()
        do {
            let database = try CourierDatabase(writer: try Self.freshDatabase())
            if hooked {
                try Self.createAppTable(database.writer)
                trace.add("world: every download completes through the app's hook (one call in five throws)")
            }
            var configuration = DownloaderConfiguration(rootDirectory: directory)
            let jitter = Locked(SplitMix(seed: rng.next()))
            configuration.clock = clock
            configuration.retryJitter = { jitter.withLock { Double($0.next() % 1000) / 1000 } }
            configuration.retryPolicy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(16), maxAttempts: 4)
            configuration.idleTimeout = .seconds(30)
            configuration.freeSpaceReserve = 0
            configuration.minSegmentSize = 256 << 10
            configuration.maxConcurrentDownloads = 1 + Int(rng.next() % 3)
            // A slow disk in one world of four: the rename of a finished file and the record's
            // update to completed lie 5 to 60 s apart (past the 30 s idle window at times).
            if later.next() % 4 == 0 {
                let slow = Duration.seconds(Int64(5 + later.next() % 56))
                configuration.pauseAfterRename = slow
                trace.add("disk: \(slow) between a rename and its record")
            }
            // Events are journaled as they are published (a subscriber hears of them a step
            // later, after the app may have acted again).
            configuration.eventTap = { event in Self.note(event, in: trace) }
            var ids: [String] = []
            // The processes of a world with a kill: each with a pid of its own, judged by
            // one liveness (a killed one is gone, its leases free at once).
            let processes = [SimulatedProcess(pid: 1001), SimulatedProcess(pid: 1002), SimulatedProcess(pid: 1003), SimulatedProcess(pid: 1004)]
            let liveness = SimulatedProcess.liveness { processes }
            // Leases are dated by the world's wall clock: they lapse in simulated time.
            let ownProcesses = killAt != nil || suspension != nil
            var first = configuration
            first.leaseOwner = LeaseOwner.make(liveness: .system, wallClock: wall)
            if ownProcesses {
                first.clock = ProcessClock(world: clock, process: processes[0])
                first.leaseOwner = processes[0].owner(liveness, wallClock: wall)
            }
            var downloader = Downloader(configuration: first, database: database,
                                        transport: SimulatedTransport(server: server, process: ownProcesses ? processes[0] : nil),
                                        logger: TraceLogHandler.logger("app", trace))
            try register(downloader)
            var killed: Downloader?
            // The system's background transfers: they go on through a kill, and end with the
            // process alive then.
            let system = SimulatedSystem(server: server, directory: directory, trace: trace)
            system.deliver(to: downloader)
            if handsOff { trace.add("world: the app hands downloads off to the system") }
            if resetting { trace.add("world: the server resets streams and refuses connections before some replies") }
            var kill = killAt.map { clock.now + $0 }
            if let killAt { trace.add(power == nil ? "world: the app's process is killed at \(killAt)" : "world: the power is cut at \(killAt)") }
            // Another process on the same database (a second downloader, with a lease owner of
            // its own): it pauses, cancels and resumes downloads the first one runs.
            // (Where the power is cut, it dies with the app's and is launched again.)
            var second = configuration
            second.leaseOwner = ownProcesses ? processes[1].owner(liveness, wallClock: wall) : LeaseOwner.make(liveness: .system, wallClock: wall)
            if power != nil { second.clock = ProcessClock(world: clock, process: processes[1]) }
            var elsewhere = Downloader(configuration: second, database: database, transport: SimulatedTransport(server: server, process: power != nil ? processes[1] : nil),
                                       logger: TraceLogHandler.logger("elsewhere", trace))
            try register(elsewhere)
            var killedElsewhere: Downloader?
            // A process launched anew after a kill: a clock, a lease owner and connections of its own.
            func launch(_ base: DownloaderConfiguration, as process: SimulatedProcess, _ name: String) throws -> Downloader {
                var launched = base
                launched.clock = ProcessClock(world: clock, process: process)
                launched.leaseOwner = process.owner(liveness, wallClock: wall)
                let relaunched = Downloader(configuration: launched, database: database, transport: SimulatedTransport(server: server, process: process),
                                            logger: TraceLogHandler.logger(name, trace))
                try register(relaunched)
                return relaunched
            }
            // The kill: the app's process stops dead, what was ready runs to its next wait (the
            // moment of the kill), the files and the database must agree, and the app is
            // launched again as a new process on them.
            func killAndRelaunch() async throws {
                trace.add("kill: process 1001")
                processes[0].kill()
                if power != nil { trace.add("kill: process 1002"); processes[1].kill() }
                system.deliver(to: nil)
                try? await clock.sleep(for: .milliseconds(1), .simulatedNetwork)   // cancelled only with the world
                if let power {
                    trace.add("power: cut")
                    for line in power.cut() { trace.add(line) }
                    killedElsewhere = elsewhere
                    elsewhere = try launch(second, as: processes[3], "elsewhere again")
                }
                outcome.violations += try await Self.disagreements(ids: ids, database: database, server: server, directory: directory, when: "after the kill")
                if hooked { outcome.violations += try await Self.rowsDisagree(ids: ids, database: database, when: "after the kill") }
                killed = downloader
                downloader = try launch(configuration, as: processes[2], "relaunched")
                let picked = try await downloader.start()
                trace.add("relaunch: process 1003 picked up \(picked.sorted())")
                system.deliver(to: downloader)
                // The app's launch: a handed-off download the system has no task for (it
                // ended while the process was dead) is taken back.
                for id in try await downloader.handedOffIDs() where !system.hasTask(id) {
                    let result = try await downloader.takeBack(id: id, "no task of the system's at the relaunch")
                    trace.add("relaunch: took \(id) back: \(result)")
                }
                kill = nil
            }

            // The downloads: one to three files of sizes that take every path (empty, small and
            // unnamed, over 1 MiB and named, segmented).
            let count = 1 + Int(rng.next() % 3)
            for i in 0..<count {
                let size = [0, 5_000, 200_000, 700_000, 1_300_000][Int(rng.next() % 5)]
                let path = "/f\(i).bin"
                // One file in twelve on a server whose fault repeats forever.
                let hostile = size > 0 && later.next() % 12 == 0
                server.serve(path, size: size, hostile: hostile)
                if hostile { trace.add("server: \(path) ignores Range and cuts at half, forever") }
                let connections = size > 512 << 10 && rng.next() % 2 == 0 ? 2 : 1
                let id = "d\(i)"
                ids.append(id)
                _ = try await downloader.enqueue(DownloadRequest(id: id, url: "http://simulated\(path)", destination: "f\(i).bin", connections: connections))
                trace.add("app: enqueue \(id) \(size) B, \(connections) connection(s)")
            }

            // The app: pauses, resumes, cancels (and in a world that hands off, hands off and
            // takes back) at moments drawn from the seed. `resumed`:
            // the ids whose last action was a start the app was told took effect.
            var resumed: Set<String> = []
            func act(_ id: String, _ action: String) async throws {
                var result = "ok"
                trace.add("app: \(action) \(id)", .app(id: id, action: action, done: false, ok: true))
                do {
                    switch action {
                    case "pause": try await downloader.pause(id: id)
                    case "resume": try await downloader.resume(id: id)
                    case "cancel": try await downloader.cancel(id: id)
                    case "pause elsewhere": try await elsewhere.pause(id: id)
                    case "cancel elsewhere": try await elsewhere.cancel(id: id)
                    case "resume elsewhere": try await elsewhere.resume(id: id)
                    case "hand off":
                        guard let request = try await downloader.handOff(id: id) else { result = "nothing to hand off"; break }
                        system.begin(request, after: .milliseconds(Int64(10 + systems.next() % 500)))
                        // The hand-off took effect: the record says so at once.
                        let state = try await downloader.record(id: id)?.state
                        if state != .handedOff { outcome.violations.append("\(id): a hand-off returned its request, and the record is \(state.map { "\($0)" } ?? "gone")") }
                    case "take back":
                        let back = try await downloader.takeBack(id: id)
                        if back == .stale { result = "not handed off" }
                    default: try await downloader.pause(id: id); try await downloader.resume(id: id)
                    }
                } catch let error as CourierError { result = error.code.rawValue } catch { result = "\(error)" }
                trace.add("app: \(action) \(id): \(result)", .app(id: id, action: action, done: true, ok: result == "ok"))
                if result == "ok", action.hasSuffix("resume") || action == "resume elsewhere" { resumed.insert(id) } else { resumed.remove(id) }
                // A stop the app was told took effect has: the record says so at once.
                if result == "ok", action == "pause" || action == "cancel" {
                    let state = try await downloader.record(id: id)?.state
                    let allowed: [DownloadState?] = action == "pause" ? [.paused, .completed, .failed] : [nil]
                    if !allowed.contains(state) { outcome.violations.append("\(id): \(action) said done, and the record is \(state.map { "\($0)" } ?? "gone")") }
                }
            }
            // The world's own moments, in time order: in a world that hands off, a first
            // hand-off within the first second (most files end within a few), besides the ones
            // that take the place of other actions; a suspension, the other process's take-over
            // and the thaw.
            var moments: [(at: ContinuousClock.Instant, what: String, id: String)] = []
            var thawAt: ContinuousClock.Instant?
            var suspended = false
            if let suspension {
                let takenOver = ids[Int(pauses.next() % UInt64(ids.count))]
                thawAt = clock.now + suspension.at + suspension.length
                moments += [(clock.now + suspension.at, "suspend", ""), (clock.now + suspension.takeOver, "resume elsewhere", takenOver), (thawAt!, "thaw", "")]
                trace.add("world: the app's process is suspended at \(suspension.at) for \(suspension.length); the other process resumes \(takenOver) at \(suspension.takeOver)")
            }
            if handsOff {
                var at = clock.now + .milliseconds(Int64(systems.next() % 1000))
                let id = ids[Int(systems.next() % UInt64(ids.count))]
                if let suspension, let thawAt, at >= thawAt - suspension.length { at = max(at, thawAt) }   // the app's code waits for its thaw
                moments.append((at, "hand off", id))
            }
            moments.sort { $0.at < $1.at }
            func worldMoments(before next: ContinuousClock.Instant?) async throws {
                while let due = moments.first, next.map({ due.at <= $0 }) ?? true {
                    moments.removeFirst()
                    try? await clock.sleep(until: due.at, for: .simulatedNetwork)   // cancelled only with the world
                    switch due.what {
                    case "suspend": trace.add("suspend: process 1001", .suspend); processes[0].suspend(); suspended = true
                    case "thaw": trace.add("thaw: process 1001", .thaw); processes[0].thaw(); suspended = false
                    default: try await act(due.id, due.what)
                    }
                }
            }
            for _ in 0..<Int(rng.next() % 5) {
                let next = clock.now + .milliseconds(Int64(rng.next() % 3000))
                if let at = kill, at <= next {
                    try await worldMoments(before: at)
                    try? await clock.sleep(until: at, for: .simulatedNetwork)   // cancelled only with the world
                    try await killAndRelaunch()
                }
                try await worldMoments(before: next)
                try? await clock.sleep(until: next, for: .simulatedNetwork)
                let id = ids[Int(rng.next() % UInt64(ids.count))]
                var action = ["pause", "resume", "cancel", "pause+resume", "pause elsewhere", "cancel elsewhere", "resume elsewhere"][Int(rng.next() % 7)]
                if handsOff, systems.next() % 2 == 0 { action = systems.next() % 4 == 0 ? "take back" : "hand off" }
                // The app's own code waits for its process's thaw.
                if suspended, !action.hasSuffix("elsewhere"), let thawAt { try await worldMoments(before: thawAt) }
                try await act(id, action)
            }
            if let at = kill { try await worldMoments(before: at) }
            if let at = kill {
                try? await clock.sleep(until: at, for: .simulatedNetwork)   // cancelled only with the world
                try await killAndRelaunch()
            }
            try await worldMoments(before: nil)

            // Then every paused download is resumed, and the world runs until each ended.
            var rounds = 0
            while true {
                var open: [String] = []
                for id in ids {
                    let record = try await downloader.record(id: id)
                    if record?.state == .paused {
                        // Every start the app was told took effect has: nothing paused it since.
                        if resumed.remove(id) != nil, record?.lastErrorCode == nil {
                            outcome.violations.append("\(id): a resume said done, and the download is paused (the resume was dropped)")
                        }
                        trace.add("app: resume \(id) at the end", .app(id: id, action: "resume", done: false, ok: true))
                        _ = try? await downloader.resume(id: id)
                    }
                    if let state = record?.state, state != .completed, state != .failed { open.append(id) }
                }
                if open.isEmpty, system.idle { break }
                rounds += 1
                if rounds > 7200 { outcome.violations.append("liveness: \(open) did not end within 2 hours of the engine's time"); break }
                try? await clock.sleep(for: .seconds(1), .simulatedNetwork)
            }
            await downloader.shutdown()
            await elsewhere.shutdown()

            // The invariants.
            for (i, id) in ids.enumerated() {
                let path = "/f\(i).bin"
                let final = directory.appendingPathComponent("f\(i).bin")
                let partial = directory.appendingPathComponent("f\(i).bin.partial")
                let record = try await database.record(id: id)
                let file = try? Data(contentsOf: final)
                let requests = server.log.filter { $0.path == path }.count
                let state = record.map { "\($0.state)" } ?? "gone"
                trace.add("end: \(id) \(state) \(record?.lastErrorCode ?? "-") requests \(requests) file \(file.map { "\($0.count) B" } ?? "none")")
                switch record?.state {
                case .completed?:
                    if file == nil || file != server.version(path, etag: record?.etag) {
                        outcome.violations.append("\(id): completed, but its file is not the version its ETag names (\(file?.count ?? -1) B)")
                    }
                    if FileManager.default.fileExists(atPath: partial.path) { outcome.violations.append("\(id): completed with a partial left") }
                case .failed?:
                    if record?.lastErrorCode == nil { outcome.violations.append("\(id): failed without a code") }
                    // The database and the files agree: a failed download put nothing in place.
                    // After a kill or a suspension, a whole version a cut completion left there
                    // (put in place, then the process killed, or suspended past its lease and the
                    // download taken over, before its completing write; the next run could not
                    // vouch for it) may stay: it may be the version the user had, and nothing
                    // written is taken away (RELIABILITY.md; seed 3600243512 for a suspension).
                    // So may one that failed with the disk's error (`E_WRITE`) as its file replaced
                    // another in place: the rename has replaced it and its folder's sync failed
                    // (undoing it would delete both; seed 43050621).
                    let cut = killAt != nil || suspension != nil || record?.lastErrorCode == CourierError.Code.writeFailed.rawValue
                    if let file, !cut || !server.versions(path).contains(file) {
                        outcome.violations.append("\(id): failed with \(cut ? "a file that is no version" : "its file") in place")
                    }
                case nil:
                    // Cancelled (before or after it completed): any file left is a whole version.
                    if let file, !server.versions(path).contains(file) { outcome.violations.append("\(id): cancelled, and left a file that is no version") }
                    // (After a power cut on a disk whose folder sync failed, the cancel's deletion
                    // of the partial may not have reached the disk: litter, not a wrong file.)
                    if FileManager.default.fileExists(atPath: partial.path), power?.cutAfterFailedFolderSync != true { outcome.violations.append("\(id): cancelled with a partial left") }
                case let state?:
                    outcome.violations.append("\(id): left \(state)")
                }
                // Liveness: requests bounded by the rules (attempts without progress, each a
                // new connection per range, restarts).
                if requests > 400 { outcome.violations.append("\(id): \(requests) requests") }
            }
            outcome.violations += Self.brokenOrder(trace.journal, ids: ids)
            if hooked { outcome.violations += try await Self.rowsDisagree(ids: ids, database: database, when: "at the end") }
            // The killed process is shut down, then let go on (unchecked): its runs, cancelled,
            // end at their next wait, and free the seed's memory.
            if let killed {
                let stopping = EngineExecutor.current.task { await killed.shutdown() }
                try? await clock.sleep(for: .milliseconds(1), .simulatedNetwork)   // cancelled only with the world
                processes[0].reap()
                await stopping.value
            }
            if let killedElsewhere {
                let stopping = EngineExecutor.current.task { await killedElsewhere.shutdown() }
                try? await clock.sleep(for: .milliseconds(1), .simulatedNetwork)   // cancelled only with the world
                processes[1].reap()
                await stopping.value
            }
        } catch {
            outcome.violations.append("the scenario failed: \(error)")
        }
        outcome.trace = trace.all
        return outcome
    }

    /// An empty database in memory with Courier's tables, copied from one migrated once (the
    /// migrations were a tenth of a seed's time).
    static func freshDatabase() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try template.backup(to: queue)
        return queue
    }

    private static let template: DatabaseQueue = {
        let queue = try! DatabaseQueue()   // in memory; a test-support failure to open one is a broken machine
        _ = try! CourierDatabase(writer: queue)
        return queue
    }()

    /// The events a trace keeps: what changes state (progress is too chatty).
    static func note(_ event: DownloadEvent, in trace: Trace) {
        switch event {
        case .progress: break
        case let .stateChanged(id, state, error):
            trace.add("event: \(id) \(state)\(error.map { " \($0.code.rawValue)" } ?? "")",
                      state == .downloading ? .downloading(id: id) : state == .queued ? .queued(id: id) : nil)
        case let .retrying(id, attempt, limit, error, delay): trace.add("event: \(id) retry \(attempt)/\(limit) \(error.code.rawValue) in \(delay)")
        case let .ended(id, end): trace.add("event: \(id) ended \(Self.words(end))", .ended(id: id, end))
        }
    }

    /// The invariants of order, read from what the server saw (its log is written as each
    /// request is sent) and the events as they were published: no request for a
    /// download after a pause or cancel the app was told took effect, nor after the download
    /// ended for good, until the app acts on it again.
    ///
    /// One allowance: a cancel from the other process announces the end at once, while a run
    /// of this process that had claimed the download sees it at its next guarded step (as a
    /// pause from there). The one request that run had decided on may still go out; nothing
    /// after it, and nothing once that run's own end is announced (seed 2294284443: a cancel
    /// elsewhere right as the run here claimed the download, its request sent a step later).
    /// The same for a process that was suspended: at its thaw, a run of it may send the one
    /// request it had decided on before (its lease lapsed meanwhile, and the other process
    /// may have ended the download); it sees the end at the reply's head (seed 9308064).
    ///
    /// And an end announced while the app's own resume of the download is under way (a run
    /// the resume stopped, or one of a thawed process, tells what it found) is undone by the
    /// resume's requeue (seeds 9307033, 9301502).
    static func brokenOrder(_ journal: [Entry], ids: [String]) -> [String] {
        var broken: [String] = []
        for (i, id) in ids.enumerated() {
            let path = "/f\(i).bin"
            var stopped: String?   // a stop that returned: nothing is asked until the app acts again
            var over = false       // ended for good (completed, failed, cancelled)
            var running = false    // a run began since the download last ended
            var cancellingElsewhere = false
            var inFlight: Int?     // requests the run here may still send after a cancel elsewhere (at most 1)
            var handedOff = false  // handed off to the system: the engine asks nothing until the hand-off ends
            var acting: String?    // the app's action on the download under way
            var runningAtSuspend = false   // a run began before or during the app's suspension, and had not ended at it
            var suspendedNow = false
            for entry in journal {
                switch entry {
                case let .app(who, action, done, ok) where who == id:
                    cancellingElsewhere = !done && action == "cancel elsewhere"
                    acting = done ? nil : action
                    if done, ok, action == "hand off" { handedOff = true }
                    if !done, action.hasPrefix("pause") || action.hasPrefix("cancel") || action == "take back" { handedOff = false }
                    if !done {
                        stopped = nil
                        over = false
                    } else if ok, action == "pause" || action == "cancel" {
                        stopped = action
                    }
                case let .downloading(who) where who == id:
                    running = true
                    if suspendedNow { runningAtSuspend = true }   // claimed by the suspended process before its next wait
                case let .queued(who) where who == id:
                    handedOff = false
                    if let acting, acting.hasSuffix("resume") || acting == "resume elsewhere" {
                        over = false
                        inFlight = nil
                    }
                case .suspend:
                    runningAtSuspend = running
                    suspendedNow = true
                case .thaw:
                    if runningAtSuspend, over, inFlight == nil { inFlight = 1 }   // the thawed run's one request
                    runningAtSuspend = false
                    suspendedNow = false
                case let .ended(who, end) where who == id:
                    switch end {
                    case .cancelled where cancellingElsewhere && running && inFlight == nil:
                        inFlight = 1   // the other process's announcement; the run here ends next
                    case .completed, .failed, .cancelled:
                        over = true
                        running = false
                        inFlight = nil
                    default: break
                    }
                case let .request(requested) where requested == path:
                    if let left = inFlight, left > 0 {
                        inFlight = left - 1
                    } else if over || inFlight != nil {
                        broken.append("\(id): a request after it ended")
                    }
                    if stopped != nil { broken.append("\(id): a request after a stop the app was told took effect") }
                    if handedOff { broken.append("\(id): a request while it was handed off to the system") }
                default: break
                }
            }
        }
        return broken
    }

    /// The files and the database agree: every download its record says completed has its
    /// final file, the version its ETag names.
    static func disagreements(ids: [String], database: CourierDatabase, server: SimulatedServer, directory: URL, when: String) async throws -> [String] {
        var found: [String] = []
        for (i, id) in ids.enumerated() {
            guard let record = try await database.record(id: id), record.state == .completed else { continue }
            let file = try? Data(contentsOf: directory.appendingPathComponent("f\(i).bin"))   // none: the disagreement said below
            if file == nil || file != server.version("/f\(i).bin", etag: record.etag) {
                found.append("\(id): completed \(when), but its file is not the version its ETag names (\(file?.count ?? -1) B)")
            }
        }
        return found
    }

    /// The app's rows and the records agree (a world with completion hooks): every download
    /// completed has its row, naming the version its record does.
    static func rowsDisagree(ids: [String], database: CourierDatabase, when: String) async throws -> [String] {
        var found: [String] = []
        for id in ids {
            guard let record = try await database.record(id: id), record.state == .completed else { continue }
            let row = try Self.appRow(id, database.writer)
            guard let row else { found.append("\(id): completed \(when), and the app has no row"); continue }
            if row != record.etag { found.append("\(id): completed \(when), and the app's row says \(row ?? "no ETag")") }
        }
        return found
    }

    /// The app's table, and its row for `id`: on the caller's thread (the simulator's), as the
    /// engine's own database calls are under it (GRDB's async calls run on a queue of its own).
    static func createAppTable(_ writer: any DatabaseWriter) throws {
        try writer.write { try $0.execute(sql: "CREATE TABLE app_files (id TEXT PRIMARY KEY, etag TEXT)") }
    }

    /// nil: no row; `.some(nil)`: a row without an ETag.
    static func appRow(_ id: String, _ writer: any DatabaseWriter) throws -> String?? {
        try writer.read { db in try Row.fetchOne(db, sql: "SELECT etag FROM app_files WHERE id = ?", arguments: [id]).map { $0["etag"] as String? } }
    }

    /// The seed stream of kills (see `run`).
    static let fatesStream: UInt64 = 0x4B11_1ED0_0000_001F
    /// The seed stream of hand-offs (see `run`), chosen so that no seed then in the corpus was one
    /// (and seeds 1 and 3 of the same-trace test are).
    static let systemsStream: UInt64 = 0x5157_E4D0_0000_02B8
    /// The seed stream of faults before a reply (see `run`), chosen so that no seed then in
    /// the corpus was one (and seeds 2 and 686656063 of the same-trace test are).
    static let resetsStream: UInt64 = 0x2E5E_7000_0000_03C6
    /// The seed stream of suspensions (see `run`), chosen so that no seed then in the corpus was one
    /// (and seeds 2 and 686656063 of the same-trace test are).
    static let suspendsStream: UInt64 = 0x5A5F_E4D0_0000_0015
    /// The seed stream of faulty disks (see `run`), chosen so that no seed then in the corpus was one
    /// (and seeds 3 and 686656063 of the same-trace test are).
    static let disksStream: UInt64 = 0xD15C_0000_0000_0287
    /// The seed stream of power cuts (see `run`), chosen so that no seed then in the corpus was one
    /// (and seed 1 of the same-trace test is).
    static let cutsStream: UInt64 = 0x90E4_C070_0000_003B
    /// The seed stream of completion hooks (see `world`), chosen so that no seed then in the corpus
    /// was one (and seeds 2 and 686656063 of the same-trace test are).
    static let hooksStream: UInt64 = 0x4007_0000_0000_0024

    static func words(_ end: DownloadEnd) -> String {
        switch end {
        case .completed: return "completed"
        case let .failed(error): return "failed \(error.code.rawValue)"
        case .cancelled: return "cancelled"
        case let .paused(error): return "paused\(error.map { " \($0.code.rawValue)" } ?? "")"
        case .leftToAnotherProcess: return "left to another process"
        case .shutDown: return "shut down"
        }
    }
}
