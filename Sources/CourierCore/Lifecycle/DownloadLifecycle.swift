import Foundation

/// The rules of one download's run, as a state machine with no I/O.
///
/// ``DownloadRun`` feeds it what happened (an attempt's outcome, the URL refresher's
/// answer, a wait that ended, a restart that was carried out, an error that escaped) and
/// performs the action it returns, until the action is an ending. Single-connection and
/// segmented downloads run under the same machine: a segmented attempt is one attempt of
/// the run, and each of its ranges counts its own passing failures with a ``RetryBudget``.
///
/// ```
///            ┌──────────── .refreshURL(.beforeResume)  (bytes kept, refresher, once)
///  start ──▶ gate ──▶ .attempt ──▶ outcome ──┬─ finished ─────────▶ .complete
///            ▲  ▲                           ├─ needsMore ────────▶ gate
///            │  │                           ├─ retry ─▶ .backOff ─▶ gate   (or .fail: gave up)
///            │  └── refreshed(url) ◀─────────┼─ refresh ─▶ .refreshURL(.accessDenied)  (once, again after bytes came; else .fail)
///            └──── restarted ◀──────────────┼─ restart ─▶ .restartFromZero (or .fail: too many)
///                                            └─ fail ────────────▶ .fail
///  an escaping error: no space ▶ .pause; otherwise ▶ .fail
/// ```
struct DownloadLifecycle: Sendable {
    /// What one attempt (a request and its body, or a segmented pass over the ranges) came to.
    enum Outcome: Sendable {
        case finished(DownloadRecord)
        /// The body ended before the whole file arrived (a bounded 206): ask again.
        case needsMore
        /// The server's file changed or ranges stopped working: start over from byte 0.
        case restart(String)
        /// A passing failure; `after` is the server's `Retry-After`.
        case retry(CourierError, after: TimeInterval?)
        /// Access denied (401, 403, 410): a fresh URL may help.
        case refresh(CourierError)
        case fail(CourierError)

        /// A bounded reply that ended as announced, short of the whole file.
        var endedCleanly: Bool {
            if case .needsMore = self { return true }
            return false
        }
    }

    /// What the run does next.
    enum Action: Sendable {
        /// Make an attempt.
        case attempt
        /// Ask the URL refresher; answer with ``refreshed(found:)``.
        case refreshURL(URLRefreshReason)
        /// Record the failure, announce the retry, wait `delay`; then ``waited(kept:)``.
        case backOff(CourierError, delay: Duration, attempt: Int, limit: Int)
        /// Delete the partial file and its ranges, reset the record; then ``restarted()``.
        case restartFromZero(reason: String)
        /// The file is in place and recorded: the run ends completed.
        case complete(DownloadRecord)
        /// The run ends failed; the record keeps the error.
        case fail(CourierError)
        /// The run ends paused (the disk is full: nothing to gain from retrying).
        case pause(CourierError)

        /// Whether the run ends with this action.
        var isEnding: Bool {
            switch self {
            case .complete, .fail, .pause: return true
            default: return false
            }
        }
    }

    private let canRefresh: Bool
    private let maxRestarts: Int
    private var retries: RetryBudget
    private var restarts = 0
    /// Bytes received and thrown away since the download's last fresh start (the record's
    /// count as the run began, plus this run's).
    private(set) var discarded: Int64
    private var refreshedBeforeResume = false
    private var refreshedAfterDenial = false
    /// The denial being answered by a refresh, while one is asked.
    private var pendingDenial: CourierError?
    private var ended = false

    /// - Parameters:
    ///   - canRefresh: a URL refresher is configured.
    ///   - discarded: the bytes the download threw away before this run (its record's count).
    init(retryPolicy: RetryPolicy, maxRestarts: Int, canRefresh: Bool, discarded: Int64 = 0,
         jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.canRefresh = canRefresh
        self.maxRestarts = maxRestarts
        self.discarded = max(0, discarded)
        self.retries = RetryBudget(policy: retryPolicy, jitter: jitter)
    }

    /// The run starts with `kept` bytes in its partial file: the mark net progress must pass.
    mutating func start(kept: Int64) -> Action {
        retries.begin(kept: kept)
        return gate(kept: kept)
    }

    /// The attempt ended with `kept` bytes held, having received and thrown away
    /// `discarded` bytes; `size` is the file's size when known (the bound on what may be
    /// thrown away scales with it). Only net progress (``RetryBudget``) starts the failure
    /// count afresh or allows another refresh after a denial; past the bound on bytes
    /// thrown away, whatever the outcome short of the file, the run fails.
    mutating func attemptEnded(_ outcome: Outcome, kept: Int64, discarded: Int64 = 0, size: Int64? = nil) -> Action {
        self.discarded += max(0, discarded)
        // Net progress: for a bounded reply that ended as announced and threw nothing away
        // (a server that serves its file in ranges of its own size), any byte past the most
        // ever held; otherwise the policy's minimum past the mark.
        let gained = retries.note(kept: kept, size: size, anyGain: outcome.endedCleanly && discarded <= 0)
        if let overLimit = overDiscardLimit(outcome, kept: kept, size: size) { return end(.fail(overLimit)) }
        // A URL that brought bytes may expire later (a presigned link over a long download):
        // its denial may be refreshed again. One denied before any new byte still ends the run.
        if gained { refreshedAfterDenial = false }
        switch outcome {
        case let .finished(record):
            return end(.complete(record))
        case .needsMore:
            // A bounded reply that added to the file: ask for the rest. One that added
            // nothing is a failure like any other, or it would be asked for forever.
            if gained { return gate(kept: kept) }
            return counted(CourierError(.shortBody, "the server's reply added nothing to the \(kept) bytes held"), after: nil, kept: kept, size: size)
        case let .restart(reason):
            restarts += 1
            if restarts > maxRestarts {
                return end(.fail(CourierError(.protocolViolation, "gave up after \(restarts - 1) restarts: \(reason)")))
            }
            retries.restartedFromZero()
            return .restartFromZero(reason: reason)
        case let .retry(error, after):
            return counted(error, after: after, kept: kept, size: size)
        case let .refresh(error):
            guard canRefresh, !refreshedAfterDenial else { return end(.fail(error)) }
            refreshedAfterDenial = true
            pendingDenial = error
            return .refreshURL(.accessDenied(status: error.httpStatus ?? 403))
        case let .fail(error):
            return end(.fail(error))
        }
    }

    /// The failure that ends a run whose bytes thrown away passed their bound, after an
    /// attempt that did not finish the file: the attempt's own error's code, or for a
    /// bounded reply or a restart, the protocol's. `nil` within the bound.
    private func overDiscardLimit(_ outcome: Outcome, kept: Int64, size: Int64?) -> CourierError? {
        let limit = retries.policy.discardLimit(size: size ?? retries.best)
        guard discarded > limit else { return nil }
        let cause: CourierError
        switch outcome {
        case .finished, .fail: return nil
        case let .retry(error, _), let .refresh(error): cause = error
        case .needsMore: cause = CourierError(.shortBody, "the server's replies keep sending bytes already held")
        case let .restart(reason): cause = CourierError(.protocolViolation, reason)
        }
        return CourierError(cause.code, "\(cause.message) (gave up: \(discarded) bytes received and thrown away, over the limit of \(limit))", httpStatus: cause.httpStatus)
    }

    /// A passing failure, counted: back off, or give up when the attempts in a row without
    /// net progress reach the limit.
    private mutating func counted(_ error: CourierError, after: TimeInterval?, kept: Int64, size: Int64?) -> Action {
        switch retries.failed(error, retryAfter: after, kept: kept, size: size) {
        case let .wait(delay, attempt, limit):
            return .backOff(error, delay: delay, attempt: attempt, limit: limit)
        case let .giveUp(attempts):
            return end(.fail(CourierError(error.code, "\(error.message) (gave up after \(attempts) attempts without progress)", httpStatus: error.httpStatus)))
        }
    }

    /// The refresher answered: `found` a fresh URL (the run now uses it), or none.
    mutating func refreshed(found: Bool, kept: Int64) -> Action {
        let denial = pendingDenial
        pendingDenial = nil
        if let denial, !found { return end(.fail(denial)) }
        return gate(kept: kept)
    }

    /// A denied range was given a fresh URL during the attempt (``RangeRefresh``): the run
    /// uses it, and does not ask for another before resuming.
    mutating func rangesRefreshedURL() {
        refreshedBeforeResume = true
    }

    /// The wait after a passing failure is over.
    mutating func waited(kept: Int64) -> Action {
        gate(kept: kept)
    }

    /// The restart from zero was carried out.
    mutating func restarted() -> Action {
        gate(kept: 0)
    }

    /// How a run ends when an error escapes it (passing errors are outcomes, not this):
    /// paused when the disk is full (nothing to gain from retrying, everything kept), else failed.
    static func ending(for error: CourierError) -> Action {
        error.code == .noSpace ? .pause(error) : .fail(error)
    }

    /// Whether the machine has returned an ending.
    var hasEnded: Bool { ended }

    /// Before each attempt: a download resuming kept bytes asks for a fresh URL once, so an
    /// expiring link is renewed before it is used rather than after a denial.
    private mutating func gate(kept: Int64) -> Action {
        if kept > 0, canRefresh, !refreshedBeforeResume {
            refreshedBeforeResume = true
            return .refreshURL(.beforeResume)
        }
        return .attempt
    }

    private mutating func end(_ action: Action) -> Action {
        ended = true
        return action
    }
}
