import Dispatch
import Foundation
import Testing
@testable import CourierCore

/// A gate a test opens once: every waiter, before or after, passes then. Tests open it on
/// every way out (`defer`), so a run held at it never hangs the suite.
final class AsyncGate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiting { waiter.resume() }
    }
}

/// Holds `database`'s writer (every write waits) until the returned gate is signalled; the
/// tests signal it on every way out (a writer held forever would hang the suite), and give
/// long leases, so no renewal queues behind it.
func holdWrites(_ database: CourierDatabase) async throws -> DispatchSemaphore {
    let gate = DispatchSemaphore(value: 0), held = Locked(false)
    Task.detached {
        try await database.writer.write { _ in
            held.withLock { $0 = true }
            gate.wait()
        }
    }
    #expect(try await eventually { held.withLock { $0 } })
    return gate
}
