import Courier

/// Attachment-specific error codes, in `CourierError`'s extensible set.
extension CourierError.Code {
    /// The attachments table holds a row Courier cannot read.
    public static let attachmentCorrupt = Self(rawValue: "E_ATTACHMENT_CORRUPT")
    /// A remote storage operation failed.
    public static let remoteStorage = Self(rawValue: "E_REMOTE_STORAGE")
    /// The remote has no such object.
    public static let remoteNotFound = Self(rawValue: "E_REMOTE_NOT_FOUND")
    /// A file too large to hold in memory for a `Data`-based remote storage
    /// (``DataRemoteStorage/maxInMemoryBytes``).
    public static let attachmentTooLarge = Self(rawValue: "E_ATTACHMENT_TOO_LARGE")
}

enum AttachmentError {
    static func corruptRecord(_ message: String) -> CourierError { CourierError(.attachmentCorrupt, message) }
}
