import CourierCore
import Foundation

/// The engine's clock under a test's control (issue 46): time stands still until the test
/// moves it, so a timing rule (a backoff, a `Retry-After`, the idle window) is checked by
/// what the engine waits for and when, never by a wall-clock window a loaded machine can
/// miss. Give it to a downloader through `DownloaderConfiguration.clock`.
///
/// A wait ends only when ``advance(to:)`` or ``advance(by:)`` passes its deadline, or when
/// its task is cancelled. While time stands still the idle watchdog cannot fire: a suite's
/// own load no longer aborts an attempt ("no data arrived for 300 ms").
package final class ManualEngineClock: EngineClock {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let purpose: EngineWait
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        var cancelledEarly: Set<UInt64> = []
        /// Every wait asked for, in order: (purpose, its length from the moment it began).
        var asked: [(EngineWait, Duration)] = []
        /// Tests waiting for the engine to begin a wait (``nextWait(_:after:within:)``).
        var watchers: [UInt64: Watcher] = [:]
    }
    private struct Watcher {
        let matches: @Sendable (EngineWait, ContinuousClock.Instant) -> Bool
        let continuation: CheckedContinuation<(purpose: EngineWait, deadline: ContinuousClock.Instant), any Error>
    }
    private let origin = ContinuousClock.now
    private let state = Locked(State())

    package init() {}

    package var now: ContinuousClock.Instant { origin + state.withLock { $0.elapsed } }

    package func sleep(until deadline: ContinuousClock.Instant, for purpose: EngineWait) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            s.asked.append((purpose, deadline - (origin + s.elapsed)))
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (early, woken) = state.withLock { s -> (Result<Void, any Error>?, [Watcher]) in
                    if s.cancelledEarly.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if origin + s.elapsed >= deadline { return (.success(()), []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, purpose: purpose, continuation: continuation)
                    let matched = s.watchers.filter { $0.value.matches(purpose, deadline) }.map(\.key).sorted()
                    return (nil, matched.compactMap { s.watchers.removeValue(forKey: $0) })
                }
                if let early { continuation.resume(with: early) }
                for watcher in woken { watcher.continuation.resume(returning: (purpose, deadline)) }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                if let sleeper = s.sleepers.removeValue(forKey: id) { return sleeper }
                s.cancelledEarly.insert(id)   // cancelled before it began to wait (or after it ended: unused)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time to `instant` (never back) and ends every wait whose deadline it passes.
    package func advance(to instant: ContinuousClock.Instant) { move { max($0, instant - self.origin) } }

    /// Moves time on by `duration`.
    package func advance(by duration: Duration) { move { $0 + duration } }

    /// Sets the time elapsed (read and written under one lock) and ends the waits it passes.
    private func move(_ elapsed: (Duration) -> Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.elapsed = elapsed(s.elapsed)
            let now = origin + s.elapsed
            // In the order of their deadlines, then of their beginning: the same every run
            // (a dictionary's order is the process's own).
            let ids = s.sleepers.filter { $0.value.deadline <= now }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }.map(\.key)
            return ids.compactMap { s.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// The earliest deadline of any wait under way now (the simulator moves time to it when
    /// nothing else can happen).
    package var earliestWait: ContinuousClock.Instant? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// The deadlines of the waits for `purpose` under way now, earliest first.
    package func waiting(_ purpose: EngineWait) -> [ContinuousClock.Instant] {
        state.withLock { s in s.sleepers.values.filter { $0.purpose == purpose }.map(\.deadline).sorted() }
    }

    /// Every wait the engine asked for so far, with its length: what a timing rule is
    /// checked against.
    package var asked: [(purpose: EngineWait, length: Duration)] { state.withLock { $0.asked.map { ($0.0, $0.1) } } }

    /// Returns the earliest deadline of a wait for `purpose` once the engine is in one (with a
    /// deadline past `after`, when given: the wait a loop starts after the one that ended).
    /// The test's own real-time limit (`within`) only stops a test whose engine never waits
    /// so: that is a failure, not a timing window the engine's behaviour depends on.
    package func nextWait(_ purpose: EngineWait, after earlier: ContinuousClock.Instant? = nil, within limit: Duration = .seconds(60)) async throws -> ContinuousClock.Instant {
        try await nextWait(where: { p, deadline in p == purpose && (earlier.map { deadline > $0 } ?? true) }, within: limit).deadline
    }

    /// Returns the wait under way that `matches` (the earliest), or the first the engine
    /// begins that does: woken by ``sleep(until:for:)`` itself, never by polling.
    package func nextWait(where matches: @escaping @Sendable (EngineWait, ContinuousClock.Instant) -> Bool,
                          within limit: Duration = .seconds(60)) async throws -> (purpose: EngineWait, deadline: ContinuousClock.Instant) {
        try await withCheckedThrowingContinuation { continuation in
            let (found, id) = state.withLock { s -> ((purpose: EngineWait, deadline: ContinuousClock.Instant)?, UInt64) in
                // The earliest, then the first begun: the same every run.
                let under = s.sleepers.filter { matches($0.value.purpose, $0.value.deadline) }.min { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
                if let under { return ((under.value.purpose, under.value.deadline), 0) }
                s.nextID += 1
                s.watchers[s.nextID] = Watcher(matches: matches, continuation: continuation)
                return (nil, s.nextID)
            }
            if let found { return continuation.resume(returning: found) }
            // This bound only ends a wait that failed.
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { [state] in
                state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation
                    .resume(throwing: CourierError(.timeout, "the engine never began the wait a test expected within \(limit)"))
            }
        }
    }
}
