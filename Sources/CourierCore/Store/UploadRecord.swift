import Foundation
import GRDB

/// The protocol an upload speaks; each keeps its own state in ``UploadRecord/remoteId``.
public enum UploadProtocol: String, Codable, Sendable {
    /// An S3 multipart upload: `remoteId` is the upload id, each confirmed part a row.
    case s3
    /// A tus 1.0 upload: `remoteId` is the upload URL, `confirmedBytes` the server's offset.
    case tus
    /// An upload of the IETF draft "Resumable Uploads for HTTP" (interop 3, 5 or 6): `remoteId`
    /// is the upload's URL, `confirmedBytes` the server's offset.
    case ietf
}

/// The twin of ``DownloadRecord`` for uploads: what is sent, where, and what the server has
/// confirmed. Bytes count as sent only once the server confirmed them (an S3 part's reply
/// with its ETag, a tus `PATCH` reply's `Upload-Offset`); a kill loses at most what was in
/// flight. The source file's size and modification time are kept so that a file changed
/// between two runs starts a new upload instead of completing a mix of two versions.
public struct UploadRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "courierUpload"
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { DatabaseDate.text($0) } }
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .custom { DatabaseDate.parse($0) } }

    /// The caller's id (`put:<hash>` for the CLI, `attachment:<id>` for the queue).
    public var id: String
    /// The file uploaded (absolute path).
    public var sourcePath: String
    /// Its size and modification time (seconds since 1970) when the upload began.
    public var sourceSize: Int64
    /// The source file's modification time (seconds since 1970) when the upload began.
    public var sourceModified: Double
    /// The protocol, and where to: `bucket/key` for S3, the creation URL for tus and the draft.
    public var kind: UploadProtocol
    /// Where to: `bucket/key` for S3, the creation URL for tus and the draft.
    public var target: String
    /// The server's handle: the S3 upload id, or the tus or draft upload URL; `nil` before it exists.
    public var remoteId: String?
    /// The part (S3) or chunk (tus) size the upload was planned with.
    public var partSize: Int64
    /// Bytes the server confirmed.
    public var confirmedBytes: Int64
    /// The blob the system gave to go on with the upload after an interruption, when the
    /// system speaks the protocol itself (``SystemResumableUploading``); used once.
    public var systemResumeData: Data?
    /// When the upload was first asked for.
    public var createdAt: Date
    /// When the record last changed.
    public var updatedAt: Date

    /// A new record for `source` (size and modification time read by the caller).
    public init(id: String, sourcePath: String, sourceSize: Int64, sourceModified: Double, kind: UploadProtocol, target: String,
                partSize: Int64, at date: Date = Date()) {
        self.id = id
        self.sourcePath = sourcePath
        self.sourceSize = sourceSize
        self.sourceModified = sourceModified
        self.kind = kind
        self.target = target
        self.partSize = partSize
        confirmedBytes = 0
        createdAt = date
        updatedAt = date
    }
}

/// A part (S3) or chunk (tus) the server confirmed, with the digests of the bytes sent:
/// on resume the file's bytes at the same place must hash the same, or the file changed.
public struct UploadPart: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "courierUploadPart"

    /// The upload's id.
    public var uploadId: String
    /// 1-based part number (S3), or the chunk's index (tus).
    public var number: Int
    /// Where its bytes are in the file, and how many.
    public var offset: Int64
    /// How many bytes the part holds.
    public var size: Int64
    /// The server's ETag for it (S3), `nil` for tus.
    public var etag: String?
    /// Hex MD5 (an S3 part's ETag is its MD5) and hex SHA-256 of the bytes sent.
    public var md5: String
    /// Hex SHA-256 of the part's bytes.
    public var sha256: String

    /// Makes a part row.
    public init(uploadId: String, number: Int, offset: Int64, size: Int64, etag: String?, md5: String, sha256: String) {
        self.uploadId = uploadId
        self.number = number
        self.offset = offset
        self.size = size
        self.etag = etag
        self.md5 = md5
        self.sha256 = sha256
    }
}
