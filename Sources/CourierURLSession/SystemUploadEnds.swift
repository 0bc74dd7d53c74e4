import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When each upload of `URLSessionResumableUploads` has ended, kept portable so that every
/// order of its callbacks is tested on Linux (`SystemUploadEndsTests`): the adapter itself
/// only forwards the session's callbacks here.
///
/// An upload ends once the session said it completed and, when the caller stopped it
/// before that, once the cancel's blob is in too: the two come in either order, and a
/// cancel that crossed the task's own end may never call back (its blob is then not waited
/// for past ``blobWait``).
@_spi(Darwin) public final class SystemUploadEnds: @unchecked Sendable { // `entries` under `lock`
    struct Entry {
        var events: (@Sendable (SystemUploadEvent) -> Void)?
        var done: CheckedContinuation<SystemUploadOutcome, Never>?
        var stopping = false
        var blob: Data?? = .none   // .some(nil): the cancel said there is none
        var outcome: SystemUploadOutcome?
    }
    private let lock = NSLock()
    private var entries: [Int: Entry] = [:]
    /// How long an ended upload that was stopped waits for the cancel's blob.
    let blobWait: Duration

    @_spi(Darwin) public init(blobWait: Duration = .seconds(5)) { self.blobWait = blobWait }

    /// Tasks known and not yet ended (for tests).
    var waiting: Int { lock.withLock { entries.count } }

    private func update(_ id: Int, creating: Bool = true, _ change: (inout Entry) -> Void) {
        let ready: (CheckedContinuation<SystemUploadOutcome, Never>, SystemUploadOutcome)? = lock.withLock {
            guard var entry = entries[id] ?? (creating ? Entry() : nil) else { return nil }   // a blob after the end: moot
            change(&entry)
            guard let done = entry.done, var outcome = entry.outcome, !entry.stopping || entry.blob != nil else { entries[id] = entry; return nil }
            if case let .interrupted(error, given) = outcome { outcome = .interrupted(error, resumeData: given ?? entry.blob ?? nil) }
            entries[id] = nil
            return (done, outcome)
        }
        if let (done, outcome) = ready { done.resume(returning: outcome) }
    }

    /// Task `id` was made: from now on a stop of it is remembered (call before the caller's
    /// cancellation can reach it).
    @_spi(Darwin) public func prepare(_ id: Int) { update(id) { _ in } }

    /// Task `id` is about to start: its events go to `events`, its end to `done`.
    @_spi(Darwin) public func begin(_ id: Int, events: @escaping @Sendable (SystemUploadEvent) -> Void, _ done: CheckedContinuation<SystemUploadOutcome, Never>) {
        update(id) { $0.events = events; $0.done = done }
    }

    /// The caller stopped task `id` (its cancel producing a blob was issued): if it has not
    /// ended yet, its end waits for the blob.
    @_spi(Darwin) public func stopping(_ id: Int) { update(id, creating: false) { if $0.outcome == nil { $0.stopping = true } } }

    /// The cancel's blob (`nil`: the server does not speak the draft, or nothing to go on from).
    @_spi(Darwin) public func paused(_ id: Int, _ blob: Data?) { update(id, creating: false) { $0.blob = .some(blob) } }

    /// An event of task `id`.
    @_spi(Darwin) public func say(_ id: Int, _ event: SystemUploadEvent) { lock.withLock { entries[id]?.events }?(event) }

    /// The session says task `id` completed: with `error`, or with the reply's `status`;
    /// `resumeData`: the error's blob (`URLError.uploadTaskResumeData`).
    @_spi(Darwin) public func ended(_ id: Int, error: (any Error)?, status: Int?, resumeData: Data?, url: String) {
        let outcome: SystemUploadOutcome
        if let error {
            let code: CourierError.Code
            switch (error as? URLError)?.code {
            case .cancelled?: code = .cancelled
            case .secureConnectionFailed?, .serverCertificateUntrusted?, .serverCertificateHasBadDate?, .serverCertificateNotYetValid?,
                 .serverCertificateHasUnknownRoot?: code = .tls
            case .appTransportSecurityRequiresSecureConnection?: code = .unsupportedScheme
            default: code = .network
            }
            outcome = .interrupted(CourierError(code, "the upload to \(url) stopped: \(error.localizedDescription)", underlying: error), resumeData: resumeData)
        } else {
            outcome = .finished(status: status ?? 0)
        }
        update(id) { $0.outcome = outcome }
        guard lock.withLock({ entries[id] != nil }) else { return }
        let wait = blobWait
        Task {
            try? await Task.sleep(for: wait)   // never cancelled: nothing holds this task
            self.paused(id, nil)
        }
    }
}
