import Foundation
import GRDB

/// A download handed to the system (a background URLSession download task) while the app
/// is suspended: what the partial file held then and what tied those bytes to the
/// server's file. The reply the system brings back is judged against exactly this, by the
/// same rules as a streamed reply (``ResponseDisposition``), so it is spliced only where
/// it fits. One row per download, deleted in the transaction that ends the hand-off.
public struct HandOffRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "courierHandOff"
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { DatabaseDate.text($0) } }
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .custom { DatabaseDate.parse($0) } }

    /// The download's id.
    public var downloadId: String
    /// The bytes the partial file held: the task asks for `Range: bytes=<keptBytes>-`.
    public var keptBytes: Int64
    /// The validators and size the kept bytes belong to (sent as `If-Range`, checked again
    /// on the reply).
    public var etag: String?
    /// The `Last-Modified` the kept bytes belong to, when there is no ETag.
    public var lastModified: String?
    /// The whole file's size, when the server said it.
    public var totalBytes: Int64?
    /// Whether the server accepts ranges, so the system's task may resume from the kept bytes.
    public var resumable: Bool
    /// When the download was handed off.
    public var createdAt: Date
    /// The ``LeaseOwner`` that handed it off: while that process lives, the hand-off is its
    /// own (another process does not end it); after, whoever recovers it may.
    public var owner: String?

    /// The plan the hand-off's request was made from; its reply is judged against it.
    public var plan: ResumePlan {
        ResumePlan(partialLength: keptBytes, etag: etag, lastModified: lastModified, totalBytes: totalBytes, resumable: resumable)
    }

    /// The hand-off of `record` whose partial holds `kept` bytes.
    init(record: DownloadRecord, kept: Int64, owner: LeaseOwner, at date: Date = Date()) {
        self.owner = owner.id
        downloadId = record.id
        keptBytes = kept
        etag = record.etag
        lastModified = record.lastModified
        totalBytes = record.totalBytes
        resumable = record.resumable
        createdAt = date
    }
}
