
/// Marks that bytes (or a reply) arrived; read by the watchdog.
final class Activity: Sendable {
    private let last = Locked(ContinuousClock.now)
    func touch() { last.withLock { $0 = .now } }
    var lastSeen: ContinuousClock.Instant { last.withLock { $0 } }
}

/// Runs `body`, aborting it with ``CourierError/Code/timeout`` when it goes `timeout`
/// without calling ``Activity/touch()``. Cancelling the caller cancels both.
func withIdleWatchdog<T: Sendable>(timeout: Duration, _ body: @escaping @Sendable (Activity) async throws -> T) async throws -> T {
    let activity = Activity()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body(activity) }
        group.addTask {
            while true {
                let deadline = activity.lastSeen + timeout
                if ContinuousClock.now >= deadline {
                    throw CourierError(.timeout, "no data arrived for \(timeout.components.seconds) s; aborting this attempt")
                }
                try await Task.sleep(until: deadline, clock: .continuous)
            }
        }
        defer { group.cancelAll() }
        while let result = try await group.next() {
            if let value = result { return value }
        }
        throw CancellationError()
    }
}
