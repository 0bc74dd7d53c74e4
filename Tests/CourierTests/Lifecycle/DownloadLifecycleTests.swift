import Foundation
import Testing
@testable import CourierCore

/// The run's rules, table-driven, with no server: each row feeds the machine a sequence of
/// inputs and checks every action it returns.
@Suite struct DownloadLifecycleTests {
    /// An input, and a short name for the action it must produce.
    enum Step {
        case start(kept: Int64)
        case ended(DownloadLifecycle.Outcome, kept: Int64 = 0, discarded: Int64 = 0, size: Int64? = nil)
        case refreshed(found: Bool, kept: Int64 = 0)
        case waited(kept: Int64 = 0)
        case restarted
        /// A denied range got a fresh URL during the attempt (no action: shown as "-").
        case rangesRefreshed
    }

    static let policy: RetryPolicy = {
        var p = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(8), maxAttempts: 3, maxRetryAfter: .seconds(30))
        p.maxRefusedAttempts = 2
        p.minimumProgress = 10   // net progress: 10 bytes past the mark, in these rows
        return p
    }()
    static let record = DownloadRecord(id: "r", remoteUrl: "http://h/f", localFinalPath: "f", partialPath: "f.partial")
    static let net = CourierError(.network, "reset")
    static let refused = CourierError(.connectionRefused, "refused")
    static let denied = CourierError(.accessDenied, "403", httpStatus: 403)
    static let gone = CourierError(.accessDenied, "410", httpStatus: 410)

    static func describe(_ a: DownloadLifecycle.Action) -> String {
        switch a {
        case .attempt: return "attempt"
        case .refreshURL(.beforeResume): return "refresh(beforeResume)"
        case let .refreshURL(.accessDenied(status)): return "refresh(denied \(status))"
        case let .backOff(e, delay, attempt, limit): return "backOff(\(e.code.rawValue) \(attempt)/\(limit) \(Int(delay.timeInterval * 1000))ms)"
        case let .restartFromZero(reason): return "restart(\(reason))"
        case let .complete(r): return "complete(\(r.id))"
        case let .fail(e): return "fail(\(e.code.rawValue): \(e.message))"
        case let .pause(e): return "pause(\(e.code.rawValue))"
        }
    }

    static func run(_ steps: [Step], canRefresh: Bool = true, maxRestarts: Int = 2) -> [String] {
        // Jitter 1: every wait is the full exponential step, so delays are exact.
        var machine = DownloadLifecycle(retryPolicy: policy, maxRestarts: maxRestarts, canRefresh: canRefresh, jitter: { 1 })
        return steps.map { step in
            let action: DownloadLifecycle.Action
            switch step {
            case let .start(kept): action = machine.start(kept: kept)
            case let .ended(o, kept, discarded, size): action = machine.attemptEnded(o, kept: kept, discarded: discarded, size: size)
            case let .refreshed(found, kept): action = machine.refreshed(found: found, kept: kept)
            case let .waited(kept): action = machine.waited(kept: kept)
            case .restarted: action = machine.restarted()
            case .rangesRefreshed:
                machine.rangesRefreshedURL()
                return "-"
            }
            return describe(action)
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var steps: [Step]
        var expected: [String]
        var canRefresh = true
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a fresh download attempts, then completes",
            steps: [.start(kept: 0), .ended(.finished(record))],
            expected: ["attempt", "complete(r)"]),
        Row(name: "kept bytes and a refresher: a fresh URL once before the first attempt",
            steps: [.start(kept: 10), .refreshed(found: true, kept: 10), .ended(.retry(net, after: nil), kept: 10), .waited(kept: 10)],
            expected: ["refresh(beforeResume)", "attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt"]),
        Row(name: "a fresh URL a denied range got in the run: no second one before resuming",
            steps: [.start(kept: 0), .rangesRefreshed, .ended(.retry(net, after: nil), kept: 10), .waited(kept: 10)],
            expected: ["attempt", "-", "backOff(E_NETWORK 1/3 1000ms)", "attempt"]),
        Row(name: "kept bytes, no refresher: straight to the attempt",
            steps: [.start(kept: 10)], expected: ["attempt"], canRefresh: false),
        Row(name: "a refresher that has nothing before resume: the stored URL is used",
            steps: [.start(kept: 10), .refreshed(found: false, kept: 10)],
            expected: ["refresh(beforeResume)", "attempt"]),
        Row(name: "passing failures back off exponentially and give up at the limit",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil)), .waited(), .ended(.retry(net, after: nil)), .waited(), .ended(.retry(net, after: nil))],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 2/3 2000ms)", "attempt",
                       "fail(E_NETWORK: reset (gave up after 3 attempts without progress))"]),
        Row(name: "an attempt that kept more than ever before starts the count afresh",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil)), .waited(), .ended(.retry(net, after: nil), kept: 10)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 1/3 1000ms)"],
            canRefresh: false),
        Row(name: "a bounded reply (needsMore) resets the count and asks again",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil)), .waited(), .ended(.needsMore, kept: 4), .ended(.retry(net, after: nil), kept: 4)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "attempt", "backOff(E_NETWORK 1/3 1000ms)"],
            canRefresh: false),
        // Issue 45: only net progress (the bytes kept passing the most ever kept) resets the
        // count, and the bytes received and thrown away are bounded.
        Row(name: "bytes received but not kept past the best are no progress: a repeating cut gives up",
            steps: [.start(kept: 10), .ended(.retry(net, after: nil), kept: 10, discarded: 10), .waited(kept: 10),
                    .ended(.retry(net, after: nil), kept: 10, discarded: 10), .waited(kept: 10), .ended(.retry(net, after: nil), kept: 10, discarded: 10)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 2/3 2000ms)", "attempt",
                       "fail(E_NETWORK: reset (gave up after 3 attempts without progress))"],
            canRefresh: false),
        Row(name: "a kept length that falls and climbs back to its old best is no progress",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil), kept: 10), .waited(kept: 10), .ended(.retry(net, after: nil), kept: 4),
                    .waited(kept: 4), .ended(.retry(net, after: nil), kept: 10)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 2/3 2000ms)", "attempt",
                       "fail(E_NETWORK: reset (gave up after 3 attempts without progress))"],
            canRefresh: false),
        Row(name: "the policy's minimum gained on every attempt goes on without end of budget",
            steps: [.start(kept: 0)] + (1...6).flatMap { i -> [Step] in [.ended(.retry(net, after: nil), kept: Int64(i * 10)), .waited(kept: Int64(i * 10))] },
            expected: ["attempt"] + Array(repeating: ["backOff(E_NETWORK 1/3 1000ms)", "attempt"], count: 6).flatMap { $0 },
            canRefresh: false),
        Row(name: "a few bytes kept per attempt are no progress (seed 686656063's 69 bytes a connection): it gives up",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil), kept: 3), .waited(kept: 3), .ended(.retry(net, after: nil), kept: 6),
                    .waited(kept: 6), .ended(.retry(net, after: nil), kept: 9)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 2/3 2000ms)", "attempt",
                       "fail(E_NETWORK: reset (gave up after 3 attempts without progress))"],
            canRefresh: false),
        Row(name: "a few bytes that add up to the minimum over attempts in a row are progress",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil), kept: 4), .waited(kept: 4), .ended(.retry(net, after: nil), kept: 8),
                    .waited(kept: 8), .ended(.retry(net, after: nil), kept: 12)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 2/3 2000ms)", "attempt",
                       "backOff(E_NETWORK 1/3 1000ms)"],
            canRefresh: false),
        Row(name: "less than the minimum left: gaining what is left but one byte is still short, the last byte is not",
            steps: [.start(kept: 95), .ended(.retry(net, after: nil), kept: 99, size: 100), .waited(kept: 99),
                    .ended(.retry(net, after: nil), kept: 100, size: 100)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "backOff(E_NETWORK 1/3 1000ms)"],
            canRefresh: false),
        Row(name: "a bounded reply that added nothing counts as a failure",
            steps: [.start(kept: 0), .ended(.needsMore, kept: 8), .ended(.needsMore, kept: 8), .waited(kept: 8), .ended(.needsMore, kept: 8),
                    .waited(kept: 8), .ended(.needsMore, kept: 8)],
            expected: ["attempt", "attempt", "backOff(E_SHORT_BODY 1/3 1000ms)", "attempt", "backOff(E_SHORT_BODY 2/3 2000ms)", "attempt",
                       "fail(E_SHORT_BODY: the server's reply added nothing to the 8 bytes held (gave up after 3 attempts without progress))"],
            canRefresh: false),
        Row(name: "bytes thrown away past twice the size and 16 MiB fail the run, even with progress",
            steps: [.start(kept: 0), .ended(.retry(net, after: nil), kept: 50, discarded: 16 << 20, size: 100), .waited(kept: 50),
                    .ended(.retry(net, after: nil), kept: 60, discarded: 201, size: 100)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt",
                       "fail(E_NETWORK: reset (gave up: 16777417 bytes received and thrown away, over the limit of 16777416))"],
            canRefresh: false),
        Row(name: "a restart from zero forgets the old best: the new version's first bytes are progress",
            steps: [.start(kept: 100), .ended(.retry(net, after: nil), kept: 100), .waited(kept: 100), .ended(.restart("changed"), kept: 100), .restarted,
                    .ended(.retry(net, after: nil), kept: 50)],
            expected: ["attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "restart(changed)", "attempt", "backOff(E_NETWORK 1/3 1000ms)"],
            canRefresh: false),
        Row(name: "a denial refreshed again only after net progress, not after bytes it did not keep",
            steps: [.start(kept: 10), .refreshed(found: true, kept: 10), .ended(.refresh(denied), kept: 10), .refreshed(found: true, kept: 10),
                    .ended(.retry(net, after: nil), kept: 10, discarded: 10), .waited(kept: 10), .ended(.refresh(denied), kept: 10)],
            expected: ["refresh(beforeResume)", "attempt", "refresh(denied 403)", "attempt", "backOff(E_NETWORK 1/3 1000ms)", "attempt", "fail(E_ACCESS_DENIED: 403)"]),
        Row(name: "a bounded reply that threw bytes away (a 206 from before the offset) needs the minimum, like a failure",
            steps: [.start(kept: 0), .ended(.needsMore, kept: 10), .ended(.needsMore, kept: 12, discarded: 5)],
            expected: ["attempt", "attempt", "backOff(E_SHORT_BODY 1/3 1000ms)"],
            canRefresh: false),
        Row(name: "bounded replies past the bound on bytes thrown away fail the run, though each gains a byte",
            steps: [.start(kept: 0), .ended(.needsMore, kept: 10), .ended(.needsMore, kept: 11, discarded: (16 << 20) + 41, size: 20)],
            expected: ["attempt", "attempt",
                       "fail(E_SHORT_BODY: the server's replies keep sending bytes already held (gave up: 16777257 bytes received and thrown away, over the limit of 16777256))"],
            canRefresh: false),
        Row(name: "restarts past the bound on bytes thrown away fail the run",
            steps: [.start(kept: 0), .ended(.restart("changed"), kept: 10, discarded: 17 << 20, size: 10)],
            expected: ["attempt", "fail(E_PROTOCOL: changed (gave up: 17825792 bytes received and thrown away, over the limit of 16777236))"],
            canRefresh: false),
        Row(name: "Retry-After longer than the backoff is honoured, capped",
            steps: [.start(kept: 0), .ended(.retry(CourierError(.httpClientError, "429", httpStatus: 429), after: 7)), .waited(),
                    .ended(.retry(CourierError(.httpClientError, "429", httpStatus: 429), after: 3600))],
            expected: ["attempt", "backOff(E_HTTP_4XX 1/3 7000ms)", "attempt", "backOff(E_HTTP_4XX 2/3 30000ms)"]),
        Row(name: "refused connections have their own, smaller limit",
            steps: [.start(kept: 0), .ended(.retry(refused, after: nil)), .waited(), .ended(.retry(refused, after: nil))],
            expected: ["attempt", "backOff(E_CONNECTION_REFUSED 1/2 1000ms)", "attempt", "fail(E_CONNECTION_REFUSED: refused (gave up after 2 attempts without progress))"]),
        Row(name: "a denial asks for a fresh URL once, and the run goes on with it",
            steps: [.start(kept: 0), .ended(.refresh(denied)), .refreshed(found: true), .ended(.finished(record))],
            expected: ["attempt", "refresh(denied 403)", "attempt", "complete(r)"]),
        Row(name: "a denial the refresher cannot answer fails with the denial",
            steps: [.start(kept: 0), .ended(.refresh(gone)), .refreshed(found: false)],
            expected: ["attempt", "refresh(denied 410)", "fail(E_ACCESS_DENIED: 410)"]),
        Row(name: "a second denial after a refresh fails: no refresh loop",
            steps: [.start(kept: 0), .ended(.refresh(denied)), .refreshed(found: true), .ended(.refresh(denied))],
            expected: ["attempt", "refresh(denied 403)", "attempt", "fail(E_ACCESS_DENIED: 403)"]),
        Row(name: "a fresh URL that brought bytes and is denied later (expired) is refreshed again",
            steps: [.start(kept: 0), .ended(.refresh(denied)), .refreshed(found: true), .ended(.retry(net, after: nil), kept: 10),
                    .waited(kept: 10), .refreshed(found: true, kept: 10), .ended(.refresh(denied), kept: 10)],
            expected: ["attempt", "refresh(denied 403)", "attempt", "backOff(E_NETWORK 1/3 1000ms)", "refresh(beforeResume)", "attempt", "refresh(denied 403)"]),
        Row(name: "a denial with no refresher fails at once",
            steps: [.start(kept: 0), .ended(.refresh(denied))],
            expected: ["attempt", "fail(E_ACCESS_DENIED: 403)"], canRefresh: false),
        Row(name: "a changed file restarts from zero, then the attempt comes without a before-resume refresh",
            steps: [.start(kept: 0), .ended(.restart("changed"), kept: 100), .restarted, .ended(.finished(record))],
            expected: ["attempt", "restart(changed)", "attempt", "complete(r)"]),
        Row(name: "restarts are bounded",
            steps: [.start(kept: 0), .ended(.restart("a")), .restarted, .ended(.restart("b")), .restarted, .ended(.restart("c"))],
            expected: ["attempt", "restart(a)", "attempt", "restart(b)", "attempt", "fail(E_PROTOCOL: gave up after 2 restarts: c)"]),
        Row(name: "a hard failure ends the run",
            steps: [.start(kept: 0), .ended(.fail(CourierError(.checksumMismatch, "bad")))],
            expected: ["attempt", "fail(E_CHECKSUM_MISMATCH: bad)"]),
    ]

    @Test(arguments: rows) func transitions(_ row: Row) {
        #expect(Self.run(row.steps, canRefresh: row.canRefresh) == row.expected)
    }

    @Test func anEscapingErrorPausesOnlyForAFullDisk() {
        guard case .pause = DownloadLifecycle.ending(for: CourierError(.noSpace, "full")) else { Issue.record("no space must pause"); return }
        guard case .fail = DownloadLifecycle.ending(for: CourierError(.fileWrite, "EIO")) else { Issue.record("others fail"); return }
    }

    @Test func endingsAreMarked() {
        var m = DownloadLifecycle(retryPolicy: Self.policy, maxRestarts: 1, canRefresh: false)
        #expect(!m.start(kept: 0).isEnding && !m.hasEnded)
        #expect(m.attemptEnded(.fail(Self.net), kept: 0).isEnding && m.hasEnded)
    }

    /// The range path counts by the same budget: same limits, same reset on net progress only.
    @Test func aRangeCountsFailuresLikeAWholeDownload() {
        var budget = RetryBudget(policy: Self.policy, kept: 20, jitter: { 1 })
        #expect(budget.failed(Self.net, retryAfter: nil, kept: 20) == .wait(.seconds(1), attempt: 1, limit: 3))
        #expect(budget.failed(Self.net, retryAfter: 5, kept: 5) == .wait(.seconds(5), attempt: 2, limit: 3))
        #expect(budget.failed(Self.net, retryAfter: nil, kept: 30) == .wait(.seconds(1), attempt: 1, limit: 3))
        #expect(budget.failed(Self.net, retryAfter: nil, kept: 31) == .wait(.seconds(2), attempt: 2, limit: 3))
        #expect(budget.failed(Self.net, retryAfter: nil, kept: 0) == .giveUp(attempts: 3))
        #expect(budget.best == 31 && budget.mark == 30)
    }

    /// The default minimum: 64 KiB past the mark, or the rest of the range when less is left.
    @Test func theDefaultMinimumIs64KiBOrTheRest() {
        var budget = RetryBudget(policy: RetryPolicy(), kept: 1000, jitter: { 1 })
        #expect(!budget.note(kept: 1000 + 65_535) && budget.note(kept: 1000 + 65_536))
        var range = RetryBudget(policy: RetryPolicy(), kept: 0, jitter: { 1 })
        #expect(!range.note(kept: 9_999, size: 10_000) && range.note(kept: 10_000, size: 10_000))
        var bounded = RetryBudget(policy: RetryPolicy(), kept: 0, jitter: { 1 })
        #expect(bounded.note(kept: 1, anyGain: true) && !bounded.note(kept: 1, anyGain: true))
    }

    /// The bound on bytes thrown away: twice the size plus 16 MiB by default, saturating.
    @Test func theDiscardLimitScalesWithTheSize() {
        let policy = RetryPolicy()
        #expect(policy.discardLimit(size: nil) == 16 << 20)
        #expect(policy.discardLimit(size: 1 << 30) == (2 << 30) + (16 << 20))
        #expect(policy.discardLimit(size: .max) == .max)
        #expect(policy.discardLimit(size: -5) == 16 << 20)
    }

    @Test func passingErrorsAreClassifiedOnce() {
        let passing: [CourierError.Code] = [.network, .connectionRefused, .timeout, .shortBody, .httpServerError, .malformedHeader]
        let final: [CourierError.Code] = [.tls, .accessDenied, .checksumMismatch, .sizeMismatch, .noSpace, .fileWrite, .invalidURL, .protocolViolation, .bodyTooLong]
        #expect(passing.allSatisfy { CourierError($0, "").isPassing })
        #expect(final.allSatisfy { !CourierError($0, "").isPassing })
    }
}
