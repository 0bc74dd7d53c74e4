import Courier
import Foundation

/// How an ``AttachmentQueue`` behaves.
public struct AttachmentQueueOptions: Sendable {
    /// The attachments table's name (default `attachments`).
    public var tableName = "attachments"
    /// Archived attachments kept as a cache before the oldest are deleted (default 100).
    public var archivedCacheLimit = 100
    /// How often a sync runs on its own (default 30 s); `.zero` disables the timer.
    public var syncInterval: Duration = .seconds(30)
    /// Transfers at once (default 4).
    public var maxConcurrentTransfers = 4
    /// Backoff between retries of one attachment's failed transfer: exponential with
    /// jitter, never a tight loop. `maxAttempts` is not used: without a
    /// ``SyncErrorHandler`` retries go on forever (the seed's rule).
    public var retryPolicy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(300))
    /// Whether this device downloads attachments (default `true`). An upload-only device
    /// sets `false`: watched ids it has no record of get none, archived ones that would
    /// need a download stay archived, passes start no download, and a `SYNCED` attachment
    /// whose file is gone is archived instead of downloaded again.
    public var downloadAttachments = true
    /// How the resumable engine behaves for downloads (its root is the local storage's
    /// ``LocalStorage/stagingDirectory``: the attachments directory by default).
    public var downloadConfiguration: (@Sendable (inout DownloaderConfiguration) -> Void)? = nil
    /// Hears how far each upload is (a remote that resumes uploads, ``ResumableUploadStorage``,
    /// reports as bytes go up; others report nothing).
    public var uploadProgress: (@Sendable (Attachment, UploadProgress) -> Void)? = nil
    /// At most this many bytes per second per upload through a remote that resumes uploads
    /// (`nil`, the default: no limit).
    public var uploadBytesPerSecond: Int64? = nil
    /// S3 multipart uploads under the remote's prefix begun longer ago than this, and no
    /// longer owed by this queue, are aborted when syncing starts (default 7 days; `nil`:
    /// never), so the bucket does not keep paying for parts nobody will complete.
    public var abandonedUploadAge: TimeInterval? = 7 * 24 * 3600

    /// What PowerSync's subclasses change (``AttachmentQueueStrategy``): the file name of a
    /// watched item that names none. `nil`: PowerSync's defaults.
    public var strategy: (any AttachmentQueueStrategy)? = nil

    /// The defaults.
    public init() {}
}
