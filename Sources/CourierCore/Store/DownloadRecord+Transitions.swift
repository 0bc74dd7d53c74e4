import Foundation

/// Every change of a record's state, lease or byte counters, by name: the runs, the
/// downloader and the bulk SQL apply these and nothing else, so the invariants hold in one
/// place:
///
/// - a record leaves `downloading` with its lease ended: its expiry cleared, and its owner
///   kept as the partial's last writer (whose run may still have it open) until that run
///   ends and releases it (a completion at once; a failure or pause of its own, and
///   ``CourierDatabase/releaseLease(id:owner:)`` after any other end); a run that takes the
///   download over while that owner may still be alive first copies the partial to a file
///   of its own (``DownloadRun/claim()``);
/// - `bytesReceived` says what the partial file holds when the record stops;
/// - a failure's code and message live only as long as the failure.
extension DownloadRecord {
    /// Claimed by `owner` to run: `downloading`, leased until `expiry`, no error.
    mutating func claim(by owner: LeaseOwner, until expiry: Date) {
        state = .downloading
        clearError()
        leaseOwner = owner.id
        leaseExpiresAt = expiry
    }

    /// The running owner's lease, renewed.
    mutating func renewLease(by owner: LeaseOwner, until expiry: Date) {
        leaseOwner = owner.id
        leaseExpiresAt = expiry
    }

    /// A passing failure: counted and remembered while the run waits to try again.
    mutating func noteFailedAttempt(_ error: CourierError, keeping kept: Int64, discarded: Int64 = 0) {
        attemptCount += 1
        bytesDiscarded += max(0, discarded)
        lastErrorCode = error.code.rawValue
        lastErrorMessage = error.message
        bytesReceived = kept
    }

    /// Nothing kept ties to the server's file: from byte 0, with no validators.
    mutating func resetToZero(countingAttempt: Bool) {
        bytesReceived = 0
        etag = nil
        lastModified = nil
        totalBytes = nil
        resumable = true
        if countingAttempt { attemptCount += 1 }
    }

    /// The final file is in place: `completed` with its length, the lease released.
    /// `validators` (the record as the run knows it) brings the reply's ETag and
    /// Last-Modified when they were not persisted before.
    mutating func complete(length: Int64, validators: DownloadRecord? = nil) {
        if let v = validators {
            etag = v.etag
            lastModified = v.lastModified
            resumable = v.resumable
            contentType = v.contentType ?? contentType
        }
        state = .completed
        releaseLease()
        bytesReceived = length
        totalBytes = length
        clearError()
        heldEtag = nil
        heldLastModified = nil
        heldBytes = nil
    }

    /// Failed for good, keeping the partial's `kept` bytes (when known) for a later resume.
    mutating func fail(_ error: CourierError, keeping kept: Int64?) {
        state = .failed
        endLease()
        lastErrorCode = error.code.rawValue
        lastErrorMessage = error.message
        if let kept { bytesReceived = kept }
    }

    /// Paused keeping `kept` bytes, with the reason when the engine paused it itself.
    /// `leaseKept`: paused from another process while its owner still runs it; the owner's
    /// lease stays until that run sees the pause and lets it go, so no other run claims the
    /// download (and writes its partial) meanwhile.
    mutating func pause(keeping kept: Int64?, error: CourierError? = nil, leaseKept: Bool = false) {
        state = .paused
        if !leaseKept { endLease() }
        if let error {
            lastErrorCode = error.code.rawValue
            lastErrorMessage = error.message
        }
        if let kept { bytesReceived = kept }
    }

    /// Back in the queue keeping `kept` bytes (when known). `freshStart`: the attempt count
    /// and the last error are forgotten (a resume asked for, or a failed download requeued).
    /// ``CourierDatabase/requeue(states:owner:excluding:listingIDs:)`` applies the same
    /// change in SQL: ``requeueAssignments`` (a test keeps the two equal).
    mutating func requeue(keeping kept: Int64?, freshStart: Bool) {
        state = .queued
        endLease()
        if freshStart {
            attemptCount = 0
            bytesDiscarded = 0
            clearError()
        }
        if let kept { bytesReceived = kept }
    }

    /// Handed to the system keeping `kept` bytes: `handedOff`, no lease; the engine leaves
    /// it alone until the hand-off ends (see ``HandOffRecord``).
    mutating func handOff(keeping kept: Int64) {
        state = .handedOff
        endLease()
        clearError()
        bytesReceived = kept
    }

    /// The hand-off's reply is spliced: back in the queue with the partial's `length` bytes
    /// and the reply's validators and size.
    mutating func adoptHandOff(length: Int64, reply: BodyPlan) {
        requeue(keeping: length, freshStart: false)
        totalBytes = reply.totalBytes ?? totalBytes
        etag = reply.etag
        lastModified = reply.lastModified
        resumable = reply.resumable
    }

    /// ``requeue(keeping:freshStart:)`` as SQL `SET` assignments for a bulk `UPDATE`, with
    /// `freshStart` for failed records: the first argument is `updatedAt`.
    static let requeueAssignments = """
        state = 'queued', leaseExpiresAt = NULL, updatedAt = ?,
            attemptCount = CASE WHEN state = 'failed' THEN 0 ELSE attemptCount END,
            bytesDiscarded = CASE WHEN state = 'failed' THEN 0 ELSE bytesDiscarded END,
            lastErrorCode = CASE WHEN state = 'failed' THEN NULL ELSE lastErrorCode END,
            lastErrorMessage = CASE WHEN state = 'failed' THEN NULL ELSE lastErrorMessage END
        """

    /// No lease: any process may claim it.
    mutating func releaseLease() {
        leaseOwner = nil
        leaseExpiresAt = nil
    }

    /// No lease in force (any process may claim it), its owner kept as the partial's last
    /// writer: a run of it may still have the partial open (see the invariants above).
    mutating func endLease() {
        leaseExpiresAt = nil
    }

    /// No lease, when `owner` holds it or was the last writer (its run, ending, has closed the
    /// partial); another's stays.
    mutating func releaseLease(ifHeldBy owner: LeaseOwner) {
        if leaseOwner == nil || leaseOwner == owner.id { releaseLease() }
    }

    private mutating func clearError() {
        lastErrorCode = nil
        lastErrorMessage = nil
    }
}
