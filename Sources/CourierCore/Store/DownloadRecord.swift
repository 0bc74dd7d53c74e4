import Foundation
import GRDB

/// One download, persisted: seed 000's record plus what the engine's decisions need.
///
/// Paths are relative to the downloader's root directory, never absolute, so they survive
/// a moved app container.
public struct DownloadRecord: Codable, Sendable, Equatable, Identifiable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "courierDownload"
    // Its row is written and read by hand (`DownloadRecord+Row.swift`), dates in
    // `DatabaseDate`'s text; `Codable` stays for JSON.

    /// The caller's id for the download (`doc_42`, `video_7`, …).
    public var id: String
    /// A caller-defined group: the media's id (seed 000's `mediaId`).
    public var mediaId: String?
    /// A caller-defined group: the media's type (`document`, `video`, …).
    public var mediaType: String?
    /// The URL to fetch, with secret query values (`api_key`, tokens, signatures) and user
    /// info redacted: a token never reaches the database file. The full URL lives only in
    /// the memory of the process it was given to; after a relaunch a ``URLRefreshing`` hook
    /// (or a ``RequestAuthorizing`` header, or the caller enqueuing again) supplies it.
    public var remoteUrl: String
    /// The final file, relative to the root directory.
    public var localFinalPath: String
    /// The `.partial` file, relative to the root directory.
    public var partialPath: String
    /// Bytes known to be in the partial file (the file's real length wins on start-up).
    public var bytesReceived: Int64
    /// The complete size, once a reply announced it.
    public var totalBytes: Int64?
    /// The last reply's ETag.
    public var etag: String?
    /// The last reply's Last-Modified.
    public var lastModified: String?
    /// Whether the partial may be resumed (false after a compressed reply).
    public var resumable: Bool
    /// Where the download stands.
    public var state: DownloadState
    /// The SHA-256 the finished file must have, lowercase hex, when the caller gave one.
    public var expectedSHA256: String?
    /// Higher runs first; ties run oldest first.
    public var priority: Int
    /// Attempts made so far (requests that failed and were retried count).
    public var attemptCount: Int
    /// The code of the last error, when there was one.
    public var lastErrorCode: String?
    /// The message of the last error (redacted).
    public var lastErrorMessage: String?
    /// When the record was made.
    public var createdAt: Date
    /// When the record last changed.
    public var updatedAt: Date
    /// The process (``LeaseOwner``) running this download while its lease is in force
    /// (``leaseExpiresAt`` in the future). With no expiry, the last process whose run wrote
    /// the partial and may still have it open (its lease was ended by a pause, a requeue, a
    /// hand-off or another process); it is cleared when that run ends. Such a record is not
    /// leased: ``LeaseOwner/isBlocked(by:)`` is false.
    public var leaseOwner: String?
    /// When the lease ends unless its owner renews it.
    public var leaseExpiresAt: Date?
    /// Connections to fetch it over (segmented download when more than 1 and the server
    /// allows ranges; see ``Segment``).
    public var connections: Int
    /// While a finished file is being revalidated (fetched again with
    /// ``DownloadRequest/revalidate``): that file's ETag, Last-Modified and size. The file
    /// stays in place until a new version is whole and verified; a 304 keeps it. `nil`
    /// otherwise.
    public var heldEtag: String?
    /// See ``heldEtag``.
    public var heldLastModified: String?
    /// See ``heldEtag``.
    public var heldBytes: Int64?
    /// The reply's `Content-Type` as the server sent it (`video/mp4`), when it sent one: a
    /// caller that names the file by what arrived (the media library's extension) reads it
    /// here, also after a relaunch.
    public var contentType: String?
    /// The size the finished file must have, when the caller gave one
    /// (``DownloadRequest/expectedSize``).
    public var expectedBytes: Int64?
    /// Bytes received and thrown away since the download was last started afresh: a `200`
    /// that answered a range and went over what was kept, a body cut before it passed the
    /// bytes kept. Bounded by ``RetryPolicy/discardLimit(size:)``; a requeue of a failed
    /// download, or a resume asked for, starts it again from 0.
    public var bytesDiscarded: Int64

    /// Makes a fresh, queued record.
    public init(id: String, remoteUrl: String, localFinalPath: String, partialPath: String, mediaId: String? = nil,
                mediaType: String? = nil, expectedSHA256: String? = nil, priority: Int = 0, now: Date = Date()) {
        self.id = id
        self.mediaId = mediaId
        self.mediaType = mediaType
        self.remoteUrl = remoteUrl
        self.localFinalPath = localFinalPath
        self.partialPath = partialPath
        self.bytesReceived = 0
        self.totalBytes = nil
        self.etag = nil
        self.lastModified = nil
        self.resumable = true
        self.state = .queued
        self.expectedSHA256 = expectedSHA256
        self.priority = priority
        self.attemptCount = 0
        self.lastErrorCode = nil
        self.lastErrorMessage = nil
        self.createdAt = now
        self.updatedAt = now
        self.leaseOwner = nil
        self.leaseExpiresAt = nil
        self.connections = 1
        self.heldEtag = nil
        self.heldLastModified = nil
        self.heldBytes = nil
        self.bytesDiscarded = 0
    }

    /// The record with this id, through a cached statement: the engine reads a record on
    /// every state change, and building the query each time showed in profiles.
    static func fetch(_ db: Database, id: String) throws -> DownloadRecord? {
        try DownloadRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(databaseTableName) WHERE id = ?"), arguments: [id])
    }

    /// The last error, rebuilt from its stored code and message.
    public var lastError: CourierError? {
        lastErrorCode.map { CourierError(.init(rawValue: $0), lastErrorMessage ?? "") }
    }

    /// Column names, for queries.
    public enum Columns {
        /// The download's id.
        public static let id = Column(CodingKeys.id)
        /// The ``DownloadState``'s raw value.
        public static let state = Column(CodingKeys.state)
        /// The scheduling priority (higher first).
        public static let priority = Column(CodingKeys.priority)
        /// When the download was first enqueued.
        public static let createdAt = Column(CodingKeys.createdAt)
        /// Bytes kept so far.
        public static let bytesReceived = Column(CodingKeys.bytesReceived)
        /// When the record last changed.
        public static let updatedAt = Column(CodingKeys.updatedAt)
    }
}
