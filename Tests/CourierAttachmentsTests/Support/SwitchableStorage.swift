import Courier
import Foundation
@testable import CourierAttachments

/// A local remote whose uploads or deletes fail (a network that is down) until the test
/// switches them back on; counts the attempts.
actor SwitchableStorage: RemoteStorage {
    let inner: LocalRemoteStorage
    private(set) var failUploads: Bool
    private(set) var failDeletes: Bool
    private(set) var uploadAttempts = 0
    private(set) var deleteAttempts = 0

    init(inner: LocalRemoteStorage, failUploads: Bool = false, failDeletes: Bool = false) {
        self.inner = inner
        self.failUploads = failUploads
        self.failDeletes = failDeletes
    }

    func setFailUploads(_ fail: Bool) { failUploads = fail }

    func upload(fileAt file: URL, attachment: Attachment) async throws {
        uploadAttempts += 1
        if failUploads { throw CourierError(.connectionRefused, "simulated: no network") }
        try await inner.upload(fileAt: file, attachment: attachment)
    }

    func download(_ attachment: Attachment, to destination: URL) async throws {
        try await inner.download(attachment, to: destination)
    }

    func delete(_ attachment: Attachment) async throws {
        deleteAttempts += 1
        if failDeletes { throw CourierError(.remoteStorage, "simulated: the delete is refused") }
        try await inner.delete(attachment)
    }
}
