import CourierTestSupport
import Foundation
@testable import CourierCore

/// The simulator's executor (issue 46): every job of the engine's tasks and actors comes
/// here (``EngineExecutor``), and one thread runs them one at a time, each time picking one
/// of the ready jobs by the seed. When none is ready, time moves to the engine clock's next
/// deadline (a backoff, an idle window, a heartbeat, the simulated network's delays), as a
/// discrete-event simulator does. So a seed fixes the order of every step, and the same seed
/// runs the same way: a race found is replayed from its seed.
final class SimulationExecutor: TaskExecutor, @unchecked Sendable { // `ready` and `rng` under `lock`
    enum End: Equatable, Sendable {
        /// The scenario's task returned.
        case finished
        /// Nothing was ready and nothing waited on the clock, the scenario not done: a
        /// deadlock, or work on a thread the simulator does not own.
        case stuck(steps: Int)
        /// The step or time budget ran out (a loop that never ends).
        case overBudget(steps: Int)
        /// It finished, but waited for work on a thread it does not own (`strays` times):
        /// the seed does not fix its order, so it is not replayable.
        case strayed(Int)
    }

    private let lock = NSLock()
    private var ready: [UnownedJob] = []
    private var rng: SplitMix
    private(set) var steps = 0
    /// How often nothing was ready and nothing waited on the clock (work elsewhere, awaited).
    private(set) var strays = 0

    init(seed: UInt64) { rng = SplitMix(seed: seed) }

    /// Whether no job is ready to run.
    var isIdle: Bool { lock.lock(); defer { lock.unlock() }; return ready.isEmpty }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.lock()
        ready.append(job)
        lock.unlock()
    }

    /// Runs jobs until `done`, moving `clock` when nothing is ready. Blocks its thread.
    func run(clock: ManualEngineClock, maxSteps: Int, maxTime: Duration, until done: () -> Bool) -> End {
        let start = clock.now
        var idleChecks = 0
        while !done() {
            lock.lock()
            if ready.isEmpty {
                lock.unlock()
                if let next = clock.earliestWait {
                    if next - start > maxTime { return .overBudget(steps: steps) }
                    clock.advance(to: next)
                    continue
                }
                // Nothing to run and nothing to wait for. Work escaping to a thread of its own
                // would show up here; give it a moment before calling the run stuck.
                if idleChecks == 0 { strays += 1 }
                idleChecks += 1
                if idleChecks > 200 { return .stuck(steps: steps) }
                usleep(500)
                continue
            }
            idleChecks = 0
            let index = Int(rng.next() % UInt64(ready.count))
            let job = ready.remove(at: index)
            lock.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            steps += 1
            if steps > maxSteps { return .overBudget(steps: steps) }
        }
        return strays == 0 ? .finished : .strayed(strays)
    }

    /// Runs `scenario` on a new executor for `seed`, on the calling thread, to its end; how
    /// the run ended, with what the scenario returned.
    static func simulateHere<T: Sendable>(seed: UInt64, clock: ManualEngineClock, maxSteps: Int = 2_000_000, maxTime: Duration = .seconds(4 * 3600),
                                          _ scenario: @escaping @Sendable () async -> T) -> (End, T?) {
        let executor = SimulationExecutor(seed: seed)
        let result = Locked<T?>(nil)
        let finished = Locked(false)
        Task(executorPreference: executor) {
            let value = await EngineExecutor.$current.withValue(EngineExecutor(simulating: executor)) { await scenario() }
            result.withLock { $0 = value }
            finished.withLock { $0 = true }
        }
        let end = executor.run(clock: clock, maxSteps: maxSteps, maxTime: maxTime) { finished.withLock { $0 } }
        // What the world left waiting runs out (the progress ticker's last wait, which a real
        // clock ends an interval later): a task left suspended kept the seed's whole world in
        // memory, and a long run slowed by a tenth every 10,000 seeds.
        if end == .finished { _ = executor.run(clock: clock, maxSteps: executor.steps + 10_000, maxTime: .seconds(3600)) { clock.earliestWait == nil && executor.isIdle } }
        return (end, result.withLock { $0 })
    }

    /// Runs `each` for every seed on `threads` threads of their own, seeds taken in order,
    /// until `stopAfter` results were `failing` (the failures to show are in): a seed's world
    /// never waits for a thread of Swift's shared pool (under a loaded test process that
    /// wait, once per seed, made 200 seeds take a minute). Returns what each seed run gave, in
    /// seed order. (The stop is a count: it read every result so far before each seed, and a
    /// long run slowed by a tenth every 10,000 seeds.)
    static func onThreads<R: Sendable>(_ seeds: [UInt64], threads: Int = 2, stopAfter: Int = .max, failing: @escaping @Sendable (R) -> Bool = { _ in false },
                                       _ each: @escaping @Sendable (UInt64) -> R) async -> [(UInt64, R)] {
        let next = Locked(0)
        let failed = Locked(0)
        let results = Locked<[(UInt64, R)]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = Locked(threads)
            for index in 0..<threads {
                let thread = Thread {
                    while true {
                        let i = next.withLock { n -> Int? in
                            guard n < seeds.count, failed.withLock({ $0 }) < stopAfter else { return nil }
                            defer { n += 1 }
                            return n
                        }
                        guard let i else { break }
                        let result = each(seeds[i])
                        if failing(result) { failed.withLock { $0 += 1 } }
                        results.withLock { $0.append((seeds[i], result)) }
                    }
                    if running.withLock({ $0 -= 1; return $0 }) == 0 { continuation.resume() }
                }
                thread.name = "courier.simulation.\(index)"
                thread.stackSize = 8 << 20
                thread.start()
            }
        }
        return results.withLock { $0 }.sorted { $0.0 < $1.0 }
    }
}
