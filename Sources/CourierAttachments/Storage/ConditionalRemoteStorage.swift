import Courier
import Foundation

/// What an upload requires of the remote object it replaces: the compare half of a
/// compare-and-swap, so a write made from an old copy never silently overwrites a newer one.
public enum UploadPrecondition: Sendable, Equatable {
    /// Upload whatever is there (the version the local copy came from is unknown).
    case none
    /// Only when no object is there yet (`If-None-Match: *`): a document created here.
    case absent
    /// Only when the object is still this version (`If-Match: <ETag>`).
    case matches(String)
}

extension CourierError.Code {
    /// The remote object changed since the local copy was taken: the upload was refused
    /// (HTTP 412) and nothing was overwritten.
    public static let conflict = Self(rawValue: "E_CONFLICT")
    /// The file changed while it was being uploaded (size or modification time), twice in
    /// one call: nothing was completed from it.
    public static let sourceChanged = Self(rawValue: "E_SOURCE_CHANGED")
}

/// A remote storage that tells an object's current version and uploads under a
/// precondition: what mirrored documents need to find conflicts (HTTP with ETags, S3, a
/// local folder).
public protocol ConditionalRemoteStorage: RemoteStorage {
    /// The object's current version (its ETag), or `nil` when there is no such object.
    func version(of attachment: Attachment) async throws -> String?
    /// Uploads the file only if `precondition` holds, and returns the new version when the
    /// remote tells it. A failed precondition is `E_CONFLICT`.
    func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition) async throws -> String?
    /// Whether the object is there, with its version and size when the remote says them;
    /// `nil` only on the remote's own "not found".
    func presence(of attachment: Attachment) async throws -> RemotePresence?
}

/// An object the remote has: its version (ETag) and size, when told.
public struct RemotePresence: Sendable, Equatable {
    /// The object's version, when the remote tells it.
    public var etag: String?
    /// The object's size in bytes, when the remote tells it.
    public var size: Int64?
    /// Makes one from what the remote answered.
    public init(etag: String?, size: Int64?) {
        self.etag = etag
        self.size = size
    }
}

extension ConditionalRemoteStorage {
    /// From ``version(of:)``: a remote whose every object has a version.
    public func presence(of attachment: Attachment) async throws -> RemotePresence? {
        try await version(of: attachment).map { RemotePresence(etag: $0, size: nil) }
    }
}

extension UploadPrecondition {
    /// The request header that carries it, if any.
    var header: (String, String)? {
        switch self {
        case .none: return nil
        case .absent: return ("If-None-Match", "*")
        case let .matches(etag): return ("If-Match", etag)
        }
    }

    /// Throws the conflict error unless an object at version `current` (`nil`: none) meets it.
    func check(current: String?, _ name: String) throws {
        switch self {
        case .none: return
        case .absent: if current != nil { throw conflict(name) }
        case let .matches(etag): if current != etag { throw conflict(name) }
        }
    }

    /// The conflict error for a 412 reply.
    func conflict(_ name: String) -> CourierError {
        CourierError(.conflict, "\(name) changed on the remote since this copy was taken (412 Precondition Failed); nothing was overwritten",
                     httpStatus: 412)
    }
}
