import Foundation

/// Exponential backoff with jitter for passing failures (network errors, timeouts, 5xx,
/// 408, 429, short bodies).
public struct RetryPolicy: Sendable, Equatable {
    /// The first delay.
    public var baseDelay: Duration
    /// The longest delay backoff grows to.
    public var maxDelay: Duration
    /// Failed attempts in a row without net progress after which the download fails. Only
    /// net progress resets the count: the bytes kept passing, by ``minimumProgress``, what
    /// was kept when the count last started afresh. An attempt that received bytes and kept
    /// no more than before (a server that ignores `Range` and cuts where it did last time)
    /// does not.
    public var maxAttempts: Int
    /// The longest `Retry-After` honoured; a server asking for more is waited for this long.
    public var maxRetryAfter: Duration
    /// Refused connections in a row after which the download fails (a server being
    /// restarted comes back within seconds; nothing listening stays so): 3 by default,
    /// about 2 s in all, where 8 backed-off attempts would take minutes.
    public var maxRefusedAttempts: Int = 3
    /// With ``discardAllowance``, how many bytes a download may receive and throw away
    /// before it fails: `discardMultiple` times its size, plus the allowance
    /// (``discardLimit(size:)``). A server that ignores `Range` makes every resume fetch the
    /// file again from byte 0; a little gained each time would otherwise cost the file's
    /// size squared over a metered link.
    public var discardMultiple: Int64 = 2
    /// See ``discardMultiple``: 16 MiB by default, so a small file survives a few cuts.
    public var discardAllowance: Int64 = 16 << 20
    /// The least an attempt (or several in a row) must add to the bytes held for the failure
    /// count to start afresh: 64 KiB by default, or the rest of the file when less is left.
    /// A connection cut after a few bytes every time is a fault, not a slow link.
    public var minimumProgress: Int64 = 64 << 10

    /// Makes a policy; the defaults are 1 s doubling to 60 s, 8 attempts, Retry-After up to 5 min.
    public init(baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), maxAttempts: Int = 8, maxRetryAfter: Duration = .seconds(300)) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = max(1, maxAttempts)
        self.maxRetryAfter = maxRetryAfter
    }

    /// The most bytes a download of `size` bytes (unknown: `nil`, then the bytes it holds
    /// count) may receive and throw away between two fresh starts; saturating.
    public func discardLimit(size: Int64?) -> Int64 {
        let (scaled, overflow) = max(0, size ?? 0).multipliedReportingOverflow(by: max(0, discardMultiple))
        let (sum, overflowAgain) = scaled.addingReportingOverflow(max(0, discardAllowance))
        return overflow || overflowAgain ? .max : sum
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
