import CourierCore
import Foundation
import Testing
@_spi(Darwin) @testable import CourierURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 48: when an upload of URLSession's own resumable upload has ended, for every order
/// of the session's callbacks (`SystemUploadEnds`, which `URLSessionResumableUploads`, the
/// Darwin-only adapter, forwards them to): a stop's blob comes before or after the task's
/// end, a stop before the task began, a stop after it ended, a cancel that never calls back.
@Suite struct SystemUploadEndsTests {
    /// Runs task `id` (its `begin`, then `callbacks` in order) and returns its outcome with
    /// the events it heard.
    static func run(_ ends: SystemUploadEnds, _ id: Int = 1, before: (SystemUploadEnds) -> Void = { _ in },
                    _ callbacks: @escaping @Sendable (SystemUploadEnds) -> Void) async -> (SystemUploadOutcome, [SystemUploadEvent]) {
        let heard = Locked<[SystemUploadEvent]>([])
        ends.prepare(id)
        before(ends)
        let outcome = await withCheckedContinuation { continuation in
            ends.begin(id, events: { event in heard.withLock { $0.append(event) } }, continuation)
            callbacks(ends)
        }
        return (outcome, heard.withLock { $0 })
    }

    static func blob(_ outcome: SystemUploadOutcome) -> Data? {
        if case let .interrupted(_, blob) = outcome { return blob }
        return nil
    }

    static func code(_ outcome: SystemUploadOutcome) -> CourierError.Code? {
        if case let .interrupted(error, _) = outcome { return error.code }
        return nil
    }

    @Test func anUploadThatEndsByItselfReportsItsStatusAndItsEvents() async {
        let (outcome, events) = await Self.run(SystemUploadEnds()) { ends in
            ends.say(1, .location(URL(string: "https://h/resumable/1")!, interopVersion: 6))
            ends.say(1, .sent(65_536))
            ends.say(2, .sent(9))   // another task's: not this one's
            ends.ended(1, error: nil, status: 201, resumeData: nil, url: "https://h/up")
        }
        guard case .finished(status: 201) = outcome else { Issue.record("\(outcome)"); return }
        #expect(events == [.location(URL(string: "https://h/resumable/1")!, interopVersion: 6), .sent(65_536)])
    }

    @Test func aStopsBlobThatComesAfterTheEndIsWaitedFor() async {
        let (outcome, _) = await Self.run(SystemUploadEnds()) { ends in
            ends.stopping(1)
            ends.ended(1, error: URLError(.cancelled), status: nil, resumeData: nil, url: "https://h/up")
            ends.paused(1, Data("blob".utf8))
        }
        #expect(Self.blob(outcome) == Data("blob".utf8))
        #expect(Self.code(outcome) == .cancelled)
    }

    @Test func aStopsBlobThatComesBeforeTheEndIsKept() async {
        let (outcome, _) = await Self.run(SystemUploadEnds()) { ends in
            ends.stopping(1)
            ends.paused(1, Data("early".utf8))
            ends.ended(1, error: URLError(.cancelled), status: nil, resumeData: nil, url: "https://h/up")
        }
        #expect(Self.blob(outcome) == Data("early".utf8))
    }

    /// The task was stopped before it began (its Swift task was already cancelled).
    @Test func aStopBeforeTheTaskBeganStillEndsWithTheBlob() async {
        let (outcome, _) = await Self.run(SystemUploadEnds(), before: { $0.stopping(1) }) { ends in
            ends.paused(1, Data("b".utf8))
            ends.ended(1, error: URLError(.cancelled), status: nil, resumeData: nil, url: "https://h/up")
        }
        #expect(Self.blob(outcome) == Data("b".utf8))
    }

    /// A failure's own blob (`URLError.uploadTaskResumeData`) is the one given, and a stop
    /// after the end waits for nothing.
    @Test func aFailuresOwnBlobIsGivenAndAStopAfterTheEndWaitsForNothing() async {
        let (outcome, _) = await Self.run(SystemUploadEnds(blobWait: .seconds(3600))) { ends in
            ends.ended(1, error: URLError(.networkConnectionLost), status: nil, resumeData: Data("own".utf8), url: "https://h/up")
            ends.stopping(1)
            ends.paused(1, nil)
        }
        #expect(Self.blob(outcome) == Data("own".utf8))
        #expect(Self.code(outcome) == .network)
    }

    /// A stop and a blob that come after the end leave nothing behind.
    @Test func aStopAfterTheEndLeavesNothingBehind() async {
        let ends = SystemUploadEnds()
        _ = await Self.run(ends) { ends in ends.ended(1, error: nil, status: 204, resumeData: nil, url: "https://h/up") }
        ends.stopping(1)
        ends.paused(1, Data("late".utf8))
        #expect(ends.waiting == 0)
    }

    /// A cancel that crossed the task's end and never calls back: the end comes after the wait.
    @Test func aCancelThatNeverCallsBackIsNotWaitedForPastTheWait() async {
        let (outcome, _) = await Self.run(SystemUploadEnds(blobWait: .milliseconds(20))) { ends in
            ends.stopping(1)
            ends.ended(1, error: URLError(.cancelled), status: nil, resumeData: nil, url: "https://h/up")
        }
        #expect(Self.code(outcome) == .cancelled && Self.blob(outcome) == nil)
    }

    @Test func theSessionsErrorsHaveCodes() async {
        let cases: [(URLError.Code, CourierError.Code)] = [
            (.serverCertificateUntrusted, .tls), (.secureConnectionFailed, .tls), (.appTransportSecurityRequiresSecureConnection, .unsupportedScheme),
            (.timedOut, .network), (.notConnectedToInternet, .network), (.cancelled, .cancelled),
        ]
        for (index, (error, code)) in cases.enumerated() {
            let (outcome, _) = await Self.run(SystemUploadEnds(), index) { ends in
                ends.ended(index, error: URLError(error), status: nil, resumeData: nil, url: "https://h/up")
            }
            #expect(Self.code(outcome) == code, "\(error)")
        }
    }
}
