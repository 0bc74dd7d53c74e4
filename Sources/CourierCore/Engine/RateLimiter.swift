import Foundation

/// Keeps one download under a byte rate (``DownloaderConfiguration/maxBytesPerSecond``),
/// shared by its connections: each buffer is counted as it arrives and the reader sleeps
/// while it is ahead of schedule, so TCP's own flow control slows the sender. The sleep is
/// cut into slices that mark the attempt active: a slow limit is not a stall.
final class RateLimiter: Sendable {
    let bytesPerSecond: Int64
    private let state = Locked<(start: ContinuousClock.Instant?, bytes: Int64)>((nil, 0))
    private let clock: any EngineClock

    init(bytesPerSecond: Int64, clock: any EngineClock) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.clock = clock
    }

    /// Counts `count` bytes; returns once taking them keeps the average under the limit.
    func consume(_ count: Int, activity: Activity?) async throws {
        let rate = Double(bytesPerSecond)
        let now = clock.now
        let due = state.withLock { s -> ContinuousClock.Instant in
            let start = s.start ?? now
            s.start = start
            s.bytes += Int64(count)
            return start + .milliseconds(Int64(Double(s.bytes) / rate * 1000))
        }
        while clock.now < due {
            try await clock.sleep(until: min(due, clock.now + .seconds(1)), for: .rateLimit)
            activity?.touch()
        }
    }
}
