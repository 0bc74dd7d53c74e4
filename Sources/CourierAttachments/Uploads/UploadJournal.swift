import Courier
import Foundation

/// Where a resumable upload keeps its record (`UploadRecord`, in Courier's store) and who hears of its progress.
public struct UploadJournal: Sendable {
    /// The database holding the record (the app's, or the CLI's).
    public let database: CourierDatabase
    /// The upload's id: the same id finds the same upload after a relaunch.
    public let id: String
    /// Called as bytes go up (at most about ten times a second).
    public let progress: (@Sendable (UploadProgress) -> Void)?
    /// At most this many bytes per second for the whole upload, all parts together (curl's
    /// `--limit-rate`); `nil`: as fast as the network goes.
    public let maxBytesPerSecond: Int64?
    /// The process that hands this upload's pieces to the system (its downloader's
    /// `leaseOwner`): another process on the same store leaves its pieces alone
    /// while it lives.
    public var owner: LeaseOwner?

    /// Makes a journal.
    public init(database: CourierDatabase, id: String, maxBytesPerSecond: Int64? = nil, progress: (@Sendable (UploadProgress) -> Void)? = nil) {
        self.database = database
        self.id = id
        self.maxBytesPerSecond = maxBytesPerSecond.map { max(1, $0) }
        self.progress = progress
    }

    /// Throws `E_INVALID_STATE` while pieces of this upload are handed to the system
    /// (``UploadHandingOff``): the system and this run never both send them. Their tasks'
    /// ends (or a take-back) end the hand-off; the upload then goes on from what the server
    /// confirmed.
    func checkNotHandedOff() async throws {
        let pieces = try await database.uploadHandOffPieces(uploadId: id)
        guard pieces.isEmpty else {
            throw CourierError(.invalidState, "\(pieces.count) piece(s) of upload \(id) are handed off to the system; take them back first (BackgroundTransfers.takeBack)")
        }
    }

    /// A journal that lives as long as the call (an upload with no place to persist to).
    static func memory(id: String) throws -> UploadJournal {
        UploadJournal(database: try CourierDatabase.inMemory(), id: id)
    }
}

/// How far an upload is.
public struct UploadProgress: Sendable, Equatable {
    /// The upload's id.
    public var id: String
    /// Bytes sent, counting those the server held from an earlier run.
    public var sentBytes: Int64
    /// Bytes the server confirmed.
    public var confirmedBytes: Int64
    /// The file's size.
    public var totalBytes: Int64
    /// Bytes the server already held when this run began (0 for a new upload).
    public var resumedFrom: Int64
    /// Current speed, bytes per second.
    public var bytesPerSecond: Double
    /// Seconds left at that speed, when it can be told.
    public var secondsRemaining: Double?

    /// The same numbers as a `DownloadProgress` (for renderers made for downloads).
    public var asTransferProgress: DownloadProgress {
        DownloadProgress(id: id, bytesReceived: sentBytes, totalBytes: totalBytes, bytesPerSecond: bytesPerSecond, secondsRemaining: secondsRemaining)
    }
}

/// Counts bytes as they go up, from several parts at once, and reports at most every 100 ms.
final class UploadCounter: @unchecked Sendable {
    private let lock = NSLock()
    private let journal: UploadJournal
    private let total: Int64
    private let resumedFrom: Int64
    private var sent: Int64
    private var confirmed: Int64
    private var meter = ProgressMeter()
    private var lastReport = 0.0
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant

    init(journal: UploadJournal, total: Int64, held: Int64) {
        self.journal = journal
        self.total = total
        resumedFrom = held
        sent = held
        confirmed = held
        start = clock.now
    }

    /// `bytes` more went out.
    func sent(_ bytes: Int64) { update { $0.sent += bytes } }

    private var paced: Int64 = 0

    /// When `bytes` more may go out under the journal's rate limit (`nil`: at once).
    func pace(_ bytes: Int64) -> ContinuousClock.Instant? {
        guard let rate = journal.maxBytesPerSecond else { return nil }
        let total = lock.withLock { paced += bytes; return paced }
        return start + .milliseconds(Int64(Double(total) / Double(rate) * 1000))
    }

    /// The server confirmed `bytes` more.
    func confirmed(_ bytes: Int64) { update(force: true) { $0.confirmed += bytes } }

    /// Takes back bytes counted as sent that the server did not keep.
    func lost(_ bytes: Int64) { update { $0.sent -= bytes } }

    private func update(force: Bool = false, _ change: (UploadCounter) -> Void) {
        guard let report = journal.progress else { lock.withLock { change(self) }; return }
        let snapshot: UploadProgress? = lock.withLock {
            change(self)
            let elapsed = (clock.now - start).components
            let now = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
            meter.record(bytes: sent, at: now)
            guard force || now - lastReport >= 0.1 else { return nil }
            lastReport = now
            return UploadProgress(id: journal.id, sentBytes: Swift.min(sent, total), confirmedBytes: confirmed, totalBytes: total, resumedFrom: resumedFrom,
                                  bytesPerSecond: max(0, meter.bytesPerSecond), secondsRemaining: meter.secondsRemaining(total: total))
        }
        if let snapshot { report(snapshot) }
    }
}

/// A remote storage whose uploads go on where they stopped after a kill or a relaunch: the
/// attachment queue passes a journal in its own database (id `attachment:<id>`).
public protocol ResumableUploadStorage: RemoteStorage {
    /// Uploads the file, resuming the upload the journal's record describes when it is the
    /// same file going to the same place; the record is deleted once the upload is done.
    func upload(fileAt file: URL, attachment: Attachment, journal: UploadJournal) async throws
}

/// The bytes one request has sent, so a failed request takes exactly them back; the
/// transport tells it of each slice, and it holds a slice back under the journal's rate limit.
final class RequestTally: RequestBodyObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var count: Int64 = 0
    let counter: UploadCounter

    init(_ counter: UploadCounter) { self.counter = counter }

    func add(_ bytes: Int64) {
        lock.withLock { count += bytes }
        counter.sent(bytes)
    }

    func willSend(_ count: Int) async throws {
        if let due = counter.pace(Int64(count)), due > .now { try await Task.sleep(until: due, clock: .continuous) }
    }

    func didSend(_ count: Int) { add(Int64(count)) }

    /// Takes this request's bytes back from the counter (the request failed).
    func takeBack() { counter.lost(lock.withLock { count }) }
}
