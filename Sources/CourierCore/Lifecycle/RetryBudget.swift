import Foundation

/// How many passing failures in a row a download (or one range of it) may have, and how
/// long to wait after each: one rule for the single-connection run and for every range.
///
/// - An attempt that moved the file forward starts the count afresh.
/// - Refused connections are counted on their own, against
///   ``RetryPolicy/maxRefusedAttempts`` (nothing listening stays so).
/// - The wait is the policy's backoff, or the server's `Retry-After` when longer.
package struct RetryBudget: Sendable {
    package let policy: RetryPolicy
    /// Jitter in 0…1 for each wait; fixed in tests.
    let jitter: @Sendable () -> Double
    package private(set) var failures = 0
    package private(set) var refusals = 0

    package init(policy: RetryPolicy, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.policy = policy
        self.jitter = jitter
    }

    /// What to do after a passing failure.
    package enum Verdict: Sendable, Equatable {
        /// Wait `delay`, then try again; this was failure `attempt` of `limit`.
        case wait(Duration, attempt: Int, limit: Int)
        /// The limit is reached: give up after `attempts`.
        case giveUp(attempts: Int)
    }

    /// Counts one passing failure. `progressed`: the attempt received bytes before failing.
    package mutating func failed(_ error: CourierError, retryAfter: TimeInterval?, progressed: Bool) -> Verdict {
        if progressed { failures = 0 }
        failures += 1
        let refused = error.code == .connectionRefused
        refusals = refused ? refusals + 1 : 0
        let limit = refused ? min(policy.maxRefusedAttempts, policy.maxAttempts) : policy.maxAttempts
        let attempt = refused ? refusals : failures
        if attempt >= limit { return .giveUp(attempts: attempt) }
        return .wait(policy.delay(afterFailures: failures, retryAfter: retryAfter, random: jitter()), attempt: attempt, limit: limit)
    }

    /// An attempt made progress and ended without an error (a bounded reply): the count
    /// starts afresh.
    package mutating func progressed() {
        failures = 0
    }
}
