import CourierTestSupport
import Foundation
import Logging
@testable import CourierCore

/// A process of the simulated world that can be killed (issue 46): its downloader's clock
/// and transport go through it, and once it is killed every wait of it, begun before or
/// after, never returns (a SIGKILL: nothing of it runs again, nothing is written after; the
/// bytes its runs held in memory are lost, what they wrote to the files and the database
/// stays). Its lease owner names a simulated pid, which the world's ``liveness`` reports gone
/// once killed, as `/proc` does for a SIGKILLed process.
///
/// It can also be suspended (as iOS suspends an app, or a shell stops a `courier` with
/// SIGSTOP): its waits stop returning until ``thaw()``, its pid stays alive, and its leases
/// lapse only once they expire (on the world's wall clock, ``wallClock(_:)``).
///
/// ``reap()`` lets the frozen waits go on once the world's invariants are checked (what the
/// dead process does then is never checked), so that its downloader can be shut down as
/// any other and its tasks end, freeing the seed's memory. (Throwing into them instead made
/// loops that wait and try again spin without end.)
final class SimulatedProcess: @unchecked Sendable { // state under `lock`
    let pid: Int32
    private let lock = NSLock()
    private var dead = false
    private var suspended = false
    private var reaped = false
    private var frozen: [UnsafeContinuation<Void, any Error>] = []

    init(pid: Int32) { self.pid = pid }

    /// The lease owner of this process's downloader, dating leases by `wallClock`.
    func owner(_ liveness: ProcessLiveness, wallClock: @escaping @Sendable () -> Date) -> LeaseOwner {
        LeaseOwner(id: "\(liveness.hostName):\(pid):p\(pid)", liveness: liveness, wallClock: wallClock)
    }

    /// The time of day in a world on `clock`: it moves with the engine's clock (a lease
    /// expires after its duration of simulated time), from a fixed start.
    static func wallClock(_ clock: ManualEngineClock) -> @Sendable () -> Date {
        let origin = clock.now
        return { Date(timeIntervalSince1970: 1_790_000_000 + (clock.now - origin).timeInterval) }
    }

    var isDead: Bool { lock.lock(); defer { lock.unlock() }; return dead }

    func kill() { lock.lock(); dead = true; lock.unlock() }

    func suspend() { lock.lock(); suspended = true; lock.unlock() }

    /// A suspended process goes on: every wait it froze returns.
    func thaw() {
        lock.lock()
        suspended = false
        let waiting = dead ? [] : frozen
        if !dead { frozen = [] }
        lock.unlock()
        for continuation in waiting { continuation.resume() }
    }

    /// Returns at once while running; while suspended, at the thaw; once killed, never
    /// (until reaped).
    func haltIfDead() async throws {
        guard lock.withLock({ dead || suspended }) else { return }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            lock.lock()
            guard !reaped, dead || suspended else { lock.unlock(); continuation.resume(); return }
            frozen.append(continuation)
            lock.unlock()
        }
    }

    /// After the checks: every frozen wait goes on, and later ones do not stop.
    func reap() {
        lock.lock()
        reaped = true
        dead = false
        let waiting = frozen
        frozen = []
        lock.unlock()
        for continuation in waiting { continuation.resume() }
    }

    /// How the world's processes judge each other's: a killed one is gone.
    static func liveness(_ processes: @escaping @Sendable () -> [SimulatedProcess]) -> ProcessLiveness {
        ProcessLiveness(hostName: "simulated", state: { pid in
            processes().first { $0.pid == pid }.map { $0.isDead ? .gone : .running } ?? .gone
        }, startTime: { _ in nil })
    }
}

/// The engine's clock as one simulated process sees it: the world's, until the process is
/// killed.
struct ProcessClock: EngineClock {
    let world: ManualEngineClock
    let process: SimulatedProcess

    var now: ContinuousClock.Instant { world.now }

    func sleep(until deadline: ContinuousClock.Instant, for purpose: EngineWait) async throws {
        try await process.haltIfDead()
        do { try await world.sleep(until: deadline, for: purpose) } catch {
            try await process.haltIfDead()   // a wait its own process cancelled as it died
            throw error
        }
        try await process.haltIfDead()
    }
}

/// The engine's log lines in a seed's trace, stamped with the engine's time and the process
/// that wrote them: `COURIER_SIM_LOG=1` with `COURIER_SIM_SEED` (off otherwise: a trace
/// compared byte for byte stays the events and requests).
struct TraceLogHandler: LogHandler {
    let trace: SimulationScenario.Trace
    let process: String
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug
    subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
    func log(event: LogEvent) {
        let id = event.metadata?["id"].map { " \($0)" } ?? ""
        trace.add("log: \(process)\(id) \(event.level) \(event.message)")
    }

    /// A logger for `process`: into the trace when `COURIER_SIM_LOG` is set, else nowhere.
    static func logger(_ process: String, _ trace: SimulationScenario.Trace) -> Logger {
        guard ProcessInfo.processInfo.environment["COURIER_SIM_LOG"] != nil else {
            return Logger(label: "simulation", factory: { _ in SwiftLogNoOpLogHandler() })
        }
        return Logger(label: process, factory: { _ in TraceLogHandler(trace: trace, process: process) })
    }
}
