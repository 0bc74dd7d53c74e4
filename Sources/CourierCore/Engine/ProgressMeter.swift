import Foundation

/// Speed and time remaining from a sliding window of samples (5 s by default).
public struct ProgressMeter: Sendable {
    private var samples: [(time: Double, bytes: Int64)] = []
    private let window: Double

    /// Makes a meter averaging over `window` seconds.
    public init(window: Double = 5) { self.window = window }

    /// Records that `bytes` were held at time `time` (seconds, any monotonic origin).
    public mutating func record(bytes: Int64, at time: Double) {
        samples.append((time, bytes))
        while let first = samples.first, time - first.time > window, samples.count > 2 { samples.removeFirst() }
    }

    /// Bytes per second over the window; 0 until two samples exist.
    public var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }

    /// Seconds left at the current speed, when the total is known and the speed is not zero.
    public func secondsRemaining(total: Int64?) -> Double? {
        guard let total, let last = samples.last, bytesPerSecond > 0 else { return nil }
        return Double(max(0, total - last.bytes)) / bytesPerSecond
    }
}
