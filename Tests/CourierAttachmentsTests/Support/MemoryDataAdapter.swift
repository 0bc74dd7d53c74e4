import Courier
import Foundation
@testable import CourierAttachments

/// PowerSync's `Data`-based remote storage, kept in memory; counts its calls.
actor MemoryDataAdapter: DataRemoteStorageAdapter {
    struct Unreachable: Error {}
    private(set) var files: [String: Data] = [:]
    private(set) var calls = 0
    var unreachable = false

    func setUnreachable(_ value: Bool) { unreachable = value }
    func put(_ name: String, _ data: Data) { files[name] = data }

    func uploadFile(fileData: Data, attachment: Attachment) async throws {
        calls += 1
        if unreachable { throw Unreachable() }
        files[attachment.filename] = fileData
    }

    func downloadFile(attachment: Attachment) async throws -> Data {
        calls += 1
        if unreachable { throw Unreachable() }
        guard let data = files[attachment.filename] else { throw CourierError(.remoteNotFound, "no \(attachment.filename)") }
        return data
    }

    func deleteFile(attachment: Attachment) async throws {
        calls += 1
        if unreachable { throw Unreachable() }
        files[attachment.filename] = nil
    }
}
