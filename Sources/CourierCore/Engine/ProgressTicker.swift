import Foundation

/// Publishes a single-stream download's progress every `interval` while bytes arrive, and
/// once more after they stop: a reply that sends a burst and then stalls shows where it
/// stalled, not where the last event before the burst left it. Between bursts it sleeps
/// until the next byte (no timer runs for a stalled or idle download).
final class ProgressTicker: Sendable {
    private struct State {
        var latest: Int64
        var published: Int64
        var parked: CheckedContinuation<Void, Never>?
        var stopped = false
    }
    private let state: Locked<State>
    private let task = Locked<Task<Void, Never>?>(nil)

    /// Starts ticking from `offset` bytes; `publish` gets the bytes held, the speed and the
    /// seconds left.
    init(offset: Int64, total: Int64?, interval: Duration, publish: @escaping @Sendable (Int64, Double, Double?) -> Void) {
        state = Locked(State(latest: offset, published: offset))
        let state = self.state
        task.withLock { t in
            t = Task {
                let clock = ContinuousClock(), started = clock.now
                var meter = ProgressMeter()
                meter.record(bytes: offset, at: 0)
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    let next: Int64? = state.withLock { s in
                        guard s.latest != s.published else { return nil }
                        s.published = s.latest
                        return s.latest
                    }
                    if let bytes = next {
                        meter.record(bytes: bytes, at: (clock.now - started).timeInterval)
                        publish(bytes, meter.bytesPerSecond, meter.secondsRemaining(total: total))
                    } else {
                        await Self.park(state)   // until the next byte, or stop()
                    }
                }
            }
        }
    }

    /// Notes that `bytes` are held (cheap: called for every chunk).
    func note(_ bytes: Int64) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
            s.latest = bytes
            defer { s.parked = nil }
            return s.parked
        }
        waiter?.resume()
    }

    /// Stops ticking (the attempt ended; its end publishes the last progress itself).
    func stop() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
            s.stopped = true
            defer { s.parked = nil }
            return s.parked
        }
        task.withLock { $0?.cancel() }
        waiter?.resume()
    }

    private static func park(_ state: Locked<State>) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now: Bool = state.withLock { s in
                if s.stopped || s.latest != s.published { return true }
                s.parked = c
                return false
            }
            if now { c.resume() }
        }
    }
}
