import Courier
import Foundation

/// Where the upload of a document's local change stands. A document with no change to
/// send has none (`nil` in ``DocumentState/upload``).
public enum DocumentUploadStatus: Sendable, Equatable {
    /// A change waits to be sent: not tried yet, or tried `attempts` times and failed with a
    /// passing error (`lastError`), and tried again after the engine's backoff.
    case pending(attempts: Int, lastError: CourierError?)
    /// Given up: an error no retry helps (403, 404…), or the retries of this launch ran out.
    /// The local file stands; the next write, ``MirrorContainer/retryUpload(_:)`` or (for a
    /// passing error) the next ``MirrorContainer/resumeUploads()`` sends it again.
    case failed(CourierError)
    /// The remote changed since the local copy was taken (`E_CONFLICT`):
    /// nothing was overwritten, and the remote version was saved beside the document as
    /// `remoteCopy` (a path in the mirror), as iCloud keeps conflict versions. Writing the
    /// document again resolves it: that upload replaces the version the copy shows.
    case conflict(remoteCopy: String)

    /// The error of a failed or conflicting upload.
    public var error: CourierError? {
        switch self {
        case let .pending(_, error): return error
        case let .failed(error): return error
        case let .conflict(copy): return CourierError(.conflict, "the remote changed; its version is kept as \(copy)", httpStatus: 412)
        }
    }
}

/// One document's upload state, as ``MirrorContainer/uploads()`` lists it.
public struct DocumentUpload: Sendable, Equatable {
    /// The document's path in the mirror.
    public var path: String
    /// Where its upload stands.
    public var status: DocumentUploadStatus
    /// The remote version the local copy is based on (its ETag), when known.
    public var baseVersion: String?

    /// Makes a value.
    public init(path: String, status: DocumentUploadStatus, baseVersion: String?) {
        self.path = path
        self.status = status
        self.baseVersion = baseVersion
    }
}
