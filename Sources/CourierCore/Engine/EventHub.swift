import Foundation

/// Fans download events out to subscribers.
///
/// A new per-download subscriber is *seeded*: live events are held back until the
/// persisted snapshot (progress, state, or the final event) has been yielded, so a
/// subscriber never sees progress go backwards and never misses a final event.
final class EventHub: Sendable {
    private struct Subscriber {
        var continuation: AsyncStream<DownloadEvent>.Continuation
        var id: String?            // nil: every download
        var seeded: Bool
        var held: [DownloadEvent]
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextKey: UInt64 = 0
        /// Final events of downloads that ended in this process and left no record (cancel).
        var tombstones: [String: DownloadEvent] = [:]
        var tombstoneOrder: [String] = []
        /// ``finishAll()`` ran (the downloader shut down): no event comes any more, so a
        /// subscriber gets its snapshot and its stream ends.
        var closed = false
    }

    private let state = Locked(State())
    /// Told of every event as it is published, on the publisher's task (the simulator's
    /// journal: a subscriber hears of it a step later).
    private let tap: (@Sendable (DownloadEvent) -> Void)?

    init(tap: (@Sendable (DownloadEvent) -> Void)? = nil) { self.tap = tap }

    /// Publishes an event to every matching subscriber; a final event ends their streams.
    func publish(_ event: DownloadEvent) {
        tap?(event)
        let toFinish: [AsyncStream<DownloadEvent>.Continuation] = state.withLock { s in
            if case .ended(_, .cancelled) = event {
                s.tombstones[event.id] = event
                s.tombstoneOrder.append(event.id)
                if s.tombstoneOrder.count > 1000 { s.tombstones[s.tombstoneOrder.removeFirst()] = nil }
            } else if case .stateChanged(_, .queued, _) = event {
                s.tombstones[event.id] = nil
            }
            var finished: [AsyncStream<DownloadEvent>.Continuation] = []
            for (key, var sub) in s.subscribers {
                if let id = sub.id, id != event.id { continue }
                if !sub.seeded {
                    sub.held.append(event)
                    s.subscribers[key] = sub
                    continue
                }
                sub.continuation.yield(event)
                if event.isFinal, sub.id != nil {
                    finished.append(sub.continuation)
                    s.subscribers[key] = nil
                }
            }
            return finished
        }
        for c in toFinish { c.finish() }
    }

    /// A stream of every download's events, never finished until ``finishAll()``; with
    /// `seeded`, live events are held until ``seed(_:with:)`` gives the key its snapshot.
    func subscribeAll(seeded: Bool = true) -> (key: UInt64, stream: AsyncStream<DownloadEvent>) {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = state.withLock { s -> UInt64? in
            s.nextKey += 1
            if s.closed, seeded { return nil }
            s.subscribers[s.nextKey] = Subscriber(continuation: continuation, id: nil, seeded: seeded, held: [])
            return s.nextKey
        }
        guard let key else {
            continuation.finish()
            return (0, stream)
        }
        continuation.onTermination = { [weak self] _ in self?.remove(key) }
        return (key, stream)
    }

    /// A stream for one download; call ``seed(_:with:)`` with the returned key once the
    /// snapshot is known.
    func subscribe(id: String) -> (key: UInt64, stream: AsyncStream<DownloadEvent>, tombstone: DownloadEvent?) {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let (key, tombstone) = state.withLock { s in
            s.nextKey += 1
            s.subscribers[s.nextKey] = Subscriber(continuation: continuation, id: id, seeded: false, held: [])
            return (s.nextKey, s.tombstones[id])
        }
        continuation.onTermination = { [weak self] _ in self?.remove(key) }
        return (key, stream, tombstone)
    }

    /// Yields the snapshot, then the events held meanwhile; finishes on a final event, and
    /// after them once the hub is closed. A held progress event below the snapshot's bytes is
    /// older than the snapshot (published before the record it was read from was written)
    /// and is dropped: yielded after it, it took the subscriber's progress back (a hogged CI
    /// run, `LifecycleTests.subscribersAreSeededAndLateOnesGetTheFinalEvent`;
    /// `EventHubTests`).
    func seed(_ key: UInt64, with snapshot: [DownloadEvent]) {
        var seen: [String: Int64] = [:]   // per download: a global subscriber's snapshot holds many
        for case let .progress(p) in snapshot { seen[p.id] = max(seen[p.id] ?? 0, p.bytesReceived) }
        let finish: AsyncStream<DownloadEvent>.Continuation? = state.withLock { s in
            guard var sub = s.subscribers[key] else { return nil }
            let held = sub.held.filter { if case let .progress(p) = $0, let floor = seen[p.id] { return p.bytesReceived >= floor } else { return true } }
            for event in snapshot + held {
                sub.continuation.yield(event)
                if event.isFinal, sub.id != nil {
                    s.subscribers[key] = nil
                    return sub.continuation
                }
            }
            if s.closed {
                s.subscribers[key] = nil
                return sub.continuation
            }
            sub.held = []
            sub.seeded = true
            s.subscribers[key] = sub
            return nil
        }
        finish?.finish()
    }

    /// Ends every stream (the downloader shut down); one still waiting for its snapshot ends
    /// after it (a download that already ended still tells its end), and so does every
    /// stream subscribed from now on.
    func finishAll() {
        let all = state.withLock { s -> [AsyncStream<DownloadEvent>.Continuation] in
            s.closed = true
            let seeded = s.subscribers.filter { $0.value.seeded }
            for key in seeded.keys { s.subscribers[key] = nil }
            return seeded.values.map(\.continuation)
        }
        for c in all { c.finish() }
    }

    private func remove(_ key: UInt64) {
        state.withLock { _ = $0.subscribers.removeValue(forKey: key) }
    }
}
