import Foundation

/// Where attachments live remotely. Implementations stream: a download goes to a file,
/// an upload comes from one, so no attachment is ever held whole in memory.
public protocol RemoteStorage: Sendable {
    /// Sends the file at `file` as the attachment's content.
    func upload(fileAt file: URL, attachment: Attachment) async throws
    /// Writes the attachment's content to `destination` (replacing it).
    func download(_ attachment: Attachment, to destination: URL) async throws
    /// Deletes the attachment remotely. Deleting one that is not there succeeds.
    func delete(_ attachment: Attachment) async throws
    /// Releases what the adapter holds (its HTTP client), awaited. The app that made the
    /// adapter calls it once nothing uses it any more; the default does nothing.
    func shutdown() async throws
}

extension RemoteStorage {
    /// Nothing to release.
    public func shutdown() async throws {}
}

/// A remote storage whose downloads are plain HTTP(S) GETs, so the queue fetches them
/// through Courier's resumable engine: a large attachment resumes after a relaunch.
public protocol ResumableRemoteStorage: RemoteStorage {
    /// The URL to GET the attachment from (fresh: a presigned link is re-signed each call).
    func downloadURL(for attachment: Attachment) async throws -> String
    /// Headers to send with the GET (auth); never persisted.
    func downloadHeaders(for attachment: Attachment) async throws -> [(name: String, value: String)]
}

extension ResumableRemoteStorage {
    /// No extra headers by default.
    public func downloadHeaders(for attachment: Attachment) async throws -> [(name: String, value: String)] { [] }
}

/// Decides, after a failed transfer, whether to try again later (`true`) or archive the
/// attachment (`false`). Without a handler the queue retries forever, with backoff.
public protocol SyncErrorHandler: Sendable {
    /// A download failed.
    func onDownloadError(attachment: Attachment, error: any Error) async -> Bool
    /// An upload failed.
    func onUploadError(attachment: Attachment, error: any Error) async -> Bool
    /// A remote delete failed.
    func onDeleteError(attachment: Attachment, error: any Error) async -> Bool
}
