import Courier
import Foundation

extension Credentials {
    /// Fresh URLs (re-signed presigned links) and auth headers from a resumable storage,
    /// for the attachment a record stands for: how attachments and mirrored documents hand
    /// their storage's credentials to the engine.
    package static func storage(_ storage: any ResumableRemoteStorage,
                                attachment: @escaping @Sendable (DownloadRecord) async throws -> Attachment) -> Credentials {
        Credentials(freshURL: { record, _ in try await storage.downloadURL(for: attachment(record)) },
                    headers: { record, _ in try await storage.downloadHeaders(for: attachment(record)) })
    }
}
