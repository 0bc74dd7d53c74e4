import Foundation

/// Exponential backoff with jitter for passing failures (network errors, timeouts, 5xx,
/// 408, 429, short bodies).
public struct RetryPolicy: Sendable, Equatable {
    /// The first delay.
    public var baseDelay: Duration
    /// The longest delay backoff grows to.
    public var maxDelay: Duration
    /// Failed attempts in a row after which the download fails. An attempt that received
    /// bytes resets the count.
    public var maxAttempts: Int
    /// The longest `Retry-After` honoured; a server asking for more is waited for this long.
    public var maxRetryAfter: Duration
    /// Refused connections in a row after which the download fails (a server being
    /// restarted comes back within seconds; nothing listening stays so): 3 by default,
    /// about 2 s in all, where 8 backed-off attempts would take minutes.
    public var maxRefusedAttempts: Int = 3

    /// Makes a policy; the defaults are 1 s doubling to 60 s, 8 attempts, Retry-After up to 5 min.
    public init(baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), maxAttempts: Int = 8, maxRetryAfter: Duration = .seconds(300)) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = max(1, maxAttempts)
        self.maxRetryAfter = maxRetryAfter
    }

    /// The delay before retry number `failures` (1 for the first retry): "equal jitter",
    /// half the exponential step fixed and half random, so retries never bunch up and never
    /// spin. A server's `Retry-After` wins when it is longer.
    public func delay(afterFailures failures: Int, retryAfter: TimeInterval?, random: Double = Double.random(in: 0...1)) -> Duration {
        let base = baseDelay.timeInterval, cap = maxDelay.timeInterval
        let exponential = min(cap, base * pow(2, Double(max(0, failures - 1))))
        var delay = exponential / 2 + exponential / 2 * min(1, max(0, random))
        if let retryAfter {
            delay = max(delay, min(retryAfter, maxRetryAfter.timeInterval))
        }
        return .milliseconds(Int64((delay * 1000).rounded()))
    }
}
