
/// Marks that bytes (or a reply) arrived; read by the watchdog. Once the body is whole,
/// ``stopWatching()`` ends the watch: finishing (checksum, fsync, rename, the record) takes
/// what the disk takes, and a watchdog firing in the middle of it would leave a renamed file
/// behind a failed record.
final class Activity: Sendable {
    private struct State { var lastSeen: ContinuousClock.Instant; var stopped = false; var fired = false }
    private let state: Locked<State>
    private let clock: any EngineClock

    init(clock: any EngineClock) {
        self.clock = clock
        state = Locked(State(lastSeen: clock.now))
    }

    /// The attempt's activity, for the steps it calls (finishing).
    @TaskLocal static var current: Activity?

    func touch() {
        let now = clock.now
        state.withLock { $0.lastSeen = max($0.lastSeen, now) }   // two touches at once never move it back
    }
    var lastSeen: ContinuousClock.Instant { state.withLock { $0.lastSeen } }
    /// Whether the watch goes on (``stopWatching()`` not called, the watchdog not fired).
    var isWatching: Bool { state.withLock { !$0.stopped && !$0.fired } }

    /// Ends the watch; false when the watchdog fired first (the attempt is being aborted).
    func stopWatching() -> Bool {
        state.withLock { s in
            if s.fired { return false }
            s.stopped = true
            return true
        }
    }

    /// The watchdog's decision at `now`: fire (once past the deadline, unless the watch
    /// ended), or the next deadline to sleep until (`nil`: the watch ended).
    fileprivate func check(timeout: Duration) -> (fire: Bool, until: ContinuousClock.Instant?) {
        let now = clock.now
        return state.withLock { s in
            if s.stopped { return (false, nil) }
            let deadline = s.lastSeen + timeout
            if now >= deadline { s.fired = true; return (true, nil) }
            return (false, deadline)
        }
    }
}

/// Runs `body`, aborting it with ``CourierError/Code/timeout`` when it goes `timeout`
/// on `clock` without calling ``Activity/touch()``, until it calls ``Activity/stopWatching()``.
/// Cancelling the caller cancels both.
func withIdleWatchdog<T: Sendable>(timeout requested: Duration, clock: any EngineClock, _ body: @escaping @Sendable (Activity) async throws -> T) async throws -> T {
    // An app's absurd idle window (10^18 s) would trap in the clock's sleep: a year is as good as never.
    let timeout = min(requested, .seconds(365 * 86_400))
    let activity = Activity(clock: clock)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await Activity.$current.withValue(activity) { try await body(activity) } }
        group.addTask {
            while true {
                let (fire, until) = activity.check(timeout: timeout)
                if fire { throw CourierError(.timeout, "no data arrived for \(describe(timeout)); aborting this attempt") }
                guard let until else { return nil }   // the body is whole: its result is what counts
                // Stopped with the attempt: the body's own end counts (its cancellation, or a
                // completion past its point of no return), not this watch's cancellation.
                do { try await clock.sleep(until: until, for: .idleWindow) } catch { return nil }
            }
        }
        defer { group.cancelAll() }
        while let result = try await group.next() {
            if let value = result { return value }
        }
        throw CancellationError()
    }
}

/// `30 s`, or `300 ms` below a second.
private func describe(_ duration: Duration) -> String {
    let (seconds, atto) = duration.components
    return seconds >= 1 ? "\(seconds) s" : "\(atto / 1_000_000_000_000_000) ms"
}
