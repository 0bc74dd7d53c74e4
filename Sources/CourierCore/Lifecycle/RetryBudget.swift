import Foundation

/// How many passing failures in a row without net progress a download (or one range of it)
/// may have, and how long to wait after each: one rule for the single-connection run and
/// for every range.
///
/// - **Net progress** is the only thing that starts the count afresh: the durable kept
///   length passing the mark where the count last started afresh by at least
///   ``RetryPolicy/minimumProgress`` (or by the rest of the file, when less is left). Bytes
///   an attempt received and did not keep (a `200` to a range that cuts where the last one
///   did, a body cut before the kept length) are not progress, nor are a few bytes kept per
///   attempt (a server that cuts every connection after 69 bytes would take 20,000 attempts
///   for 1.5 MB): a server whose fault repeats forever gets ``RetryPolicy/maxAttempts``
///   attempts in a row, never an endless loop.
/// - Refused connections are counted on their own, against
///   ``RetryPolicy/maxRefusedAttempts`` (nothing listening stays so).
/// - The wait is the policy's backoff, or the server's `Retry-After` when longer.
package struct RetryBudget: Sendable {
    package let policy: RetryPolicy
    /// Jitter in 0…1 for each wait; fixed in tests.
    let jitter: @Sendable () -> Double
    /// Attempts in a row that ended without net progress.
    package private(set) var failures = 0
    package private(set) var refusals = 0
    /// The most bytes the download (or range) has held so far.
    package private(set) var best: Int64
    /// What was held when the count last started afresh: net progress passes it by
    /// ``RetryPolicy/minimumProgress``.
    package private(set) var mark: Int64

    /// - Parameter kept: what is held as the budget starts (a resumed download's bytes).
    package init(policy: RetryPolicy, kept: Int64 = 0, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.policy = policy
        self.best = max(0, kept)
        self.mark = max(0, kept)
        self.jitter = jitter
    }

    /// What to do after a passing failure.
    package enum Verdict: Sendable, Equatable {
        /// Wait `delay`, then try again; this was failure `attempt` of `limit`.
        case wait(Duration, attempt: Int, limit: Int)
        /// The limit is reached: give up after `attempts`.
        case giveUp(attempts: Int)
    }

    /// Notes what is held after an attempt, of a file (or range) of `size` bytes when known;
    /// true (and the count starts afresh) on net progress. `anyGain`: a bounded reply that
    /// ended cleanly, for which passing the most ever held is enough (a server that serves
    /// small ranges is slow, not failing; each such reply adds to the file).
    @discardableResult
    package mutating func note(kept: Int64, size: Int64? = nil, anyGain: Bool = false) -> Bool {
        let passedBest = kept > best
        best = max(best, kept)
        let rest = size.map { max(1, $0 - mark) } ?? .max
        let (needed, overflow) = mark.addingReportingOverflow(max(1, min(policy.minimumProgress, rest)))
        guard (anyGain && passedBest) || (!overflow && kept >= needed) else { return false }
        mark = kept
        failures = 0
        return true
    }

    /// The run begins with `kept` bytes held: they are the mark net progress must pass.
    package mutating func begin(kept: Int64) {
        best = max(0, kept)
        mark = max(0, kept)
    }

    /// The file was started again from byte 0 (a new version on the server): what the old
    /// one held is no measure of the new one's progress. The count goes on.
    package mutating func restartedFromZero() {
        best = 0
        mark = 0
    }

    /// Counts one passing failure, after which `kept` bytes are held.
    package mutating func failed(_ error: CourierError, retryAfter: TimeInterval?, kept: Int64, size: Int64? = nil) -> Verdict {
        note(kept: kept, size: size)
        failures += 1
        let refused = error.code == .connectionRefused
        refusals = refused ? refusals + 1 : 0
        let limit = refused ? min(policy.maxRefusedAttempts, policy.maxAttempts) : policy.maxAttempts
        let attempt = refused ? refusals : failures
        if attempt >= limit { return .giveUp(attempts: attempt) }
        return .wait(policy.delay(afterFailures: failures, retryAfter: retryAfter, random: jitter()), attempt: attempt, limit: limit)
    }
}
