import Foundation

/// Runs blocking file work (fsync, rename, the directory's fsync, a full buffer's write) on
/// a few threads of its own, so it does not hold one of the few cooperative threads while
/// other downloads wait. Threads that wait on a condition, as SwiftNIO's thread pool's did:
/// a dispatch queue was measured slower here (1 GiB over one connection: 1.12 × the wall
/// time; 2,000 small files: 1.08 ×, from the latency of waking its workers; BENCHMARKS.md).
enum Blocking {
    private static let pool = BlockingPool(threads: max(2, ProcessInfo.processInfo.activeProcessorCount))

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        if EngineExecutor.current.runsInline { return try body() }   // the simulator: on its one thread
        return try await withCheckedThrowingContinuation { continuation in
            pool.submit { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// A fixed set of threads taking jobs in order from one queue.
final class BlockingPool: @unchecked Sendable { // `jobs` is guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var next = 0

    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "courier.blocking.\(index)"
            thread.start()
        }
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while next == jobs.count { condition.wait() }
            let job = jobs[next]
            next += 1
            if next == jobs.count { jobs.removeAll(keepingCapacity: true); next = 0 }
            condition.unlock()
            job()
        }
    }
}
