import Foundation

/// Publishes the progress of every single-stream download of a downloader every `interval`
/// while its bytes arrive, and once more after they stop: a reply that sends a burst and then
/// stalls shows where it stalled, not where the last event before the burst left it. One task
/// ticks for all of them, and only while one runs (a task per download cost a 64 KiB file
/// 150 µs of CPU).
final class ProgressTicker: Sendable {
    /// One download's bytes, noted by its attempt for every chunk.
    final class Slot: Sendable {
        let id: String
        let total: Int64?
        private struct State {
            var latest: Int64
            var published: Int64
            var meter = ProgressMeter()
            var closed = false
        }
        private let state: Locked<State>
        private let started = ContinuousClock.now

        fileprivate init(id: String, offset: Int64, total: Int64?) {
            self.id = id
            self.total = total
            var initial = State(latest: offset, published: offset)
            initial.meter.record(bytes: offset, at: 0)
            state = Locked(initial)
        }

        /// Notes that `bytes` are held (cheap: called for every chunk).
        func note(_ bytes: Int64) { state.withLock { $0.latest = bytes } }

        /// Publishes the progress when bytes arrived since the last, under the slot's lock, so
        /// nothing of this slot is published once ``close()`` returned (the attempt's own last
        /// event and the final event come after it).
        fileprivate func publishIfChanged(to hub: EventHub) {
            let elapsed = (ContinuousClock.now - started).timeInterval
            state.withLock { s in
                guard !s.closed, s.latest != s.published else { return }
                s.published = s.latest
                s.meter.record(bytes: s.latest, at: elapsed)
                hub.publish(.progress(DownloadProgress(id: id, bytesReceived: s.latest, totalBytes: total,
                                                       bytesPerSecond: s.meter.bytesPerSecond, secondsRemaining: s.meter.secondsRemaining(total: total))))
            }
        }

        fileprivate func close() { state.withLock { $0.closed = true } }
    }

    private struct State {
        var slots: [ObjectIdentifier: Slot] = [:]
        var ticking = false
    }
    private let state = Locked(State())
    private let hub: EventHub
    private let interval: Duration
    private let clock: any EngineClock

    init(hub: EventHub, interval: Duration, clock: any EngineClock) {
        self.hub = hub
        self.interval = interval
        self.clock = clock
    }

    /// Starts following a download's bytes from `offset`; ``stop(_:)`` it when its attempt ends.
    func start(id: String, offset: Int64, total: Int64?) -> Slot {
        let slot = Slot(id: id, offset: offset, total: total)
        let startTicking = state.withLock { s -> Bool in
            s.slots[ObjectIdentifier(slot)] = slot
            defer { s.ticking = true }
            return !s.ticking
        }
        if startTicking {
            EngineExecutor.current.task { [self] in await tick() }
        }
        return slot
    }

    /// Stops following `slot` (its attempt publishes its last progress itself); `publishing`:
    /// its last bytes are published first, when they were not yet (a hand-off's end, which has
    /// no attempt of its own to say them).
    func stop(_ slot: Slot, publishing: Bool = false) {
        state.withLock { _ = $0.slots.removeValue(forKey: ObjectIdentifier(slot)) }
        if publishing { slot.publishIfChanged(to: hub) }
        slot.close()
    }

    private func tick() async {
        while true {
            try? await clock.sleep(for: interval, .progressTick)   // never cancelled: it ends when no download runs
            let slots: [Slot]? = state.withLock { s in
                if s.slots.isEmpty { s.ticking = false; return nil }
                return Array(s.slots.values)
            }
            guard let slots else { return }
            for slot in slots { slot.publishIfChanged(to: hub) }
        }
    }
}
