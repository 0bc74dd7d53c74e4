import Courier
import Foundation
import GRDB

/// Saving new attachments (queued for upload) and deleting them (queued for a remote delete).
extension AttachmentQueue {
    /// Saves data as a new attachment queued for upload, and runs `updateHook` in the same
    /// transaction, so the app's row and the attachment appear together or not at all.
    @discardableResult
    public func saveFile(data: Data, mediaType: String?, fileExtension: String?, metaData: String? = nil,
                         updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws -> Attachment {
        let (id, filename) = try newName(fileExtension)
        let size = try await localStorage.save(data, as: filename)
        return try await commitSaved(id: id, filename: filename, size: size, mediaType: mediaType, metaData: metaData, updateHook: updateHook)
    }

    /// Saves a file (streamed, never held in memory) as a new attachment queued for upload,
    /// with the app's `updateHook` in the same transaction.
    @discardableResult
    public func saveFile(from source: URL, mediaType: String?, fileExtension: String?, metaData: String? = nil,
                         updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws -> Attachment {
        let (id, filename) = try newName(fileExtension ?? (source.pathExtension.isEmpty ? nil : source.pathExtension))
        let size = try await localStorage.save(from: source, as: filename)
        return try await commitSaved(id: id, filename: filename, size: size, mediaType: mediaType, metaData: metaData, updateHook: updateHook)
    }

    func newName(_ fileExtension: String?) throws -> (String, String) {
        let id = UUID().uuidString.lowercased()
        guard let ext = fileExtension, !ext.isEmpty else { return (id, id) }
        guard ext.utf8.count <= 32, ext.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) }) else {
            throw CourierError(.invalidArgument, "a file extension is 1 to 32 letters or digits")
        }
        return (id, "\(id).\(ext)")
    }

    func commitSaved(id: String, filename: String, size: Int64, mediaType: String?, metaData: String?,
                     updateHook: @escaping @Sendable (Database, Attachment) throws -> Void) async throws -> Attachment {
        let attachment = Attachment(id: id, filename: filename, mediaType: mediaType, state: .queuedUpload, size: size, metaData: metaData, localURI: filename)
        let table = self.table
        do {
            try await writer.write { db in
                try table.upsert(db, attachment)
                try updateHook(db, attachment)
            }
        } catch {
            try? localStorage.remove(filename)   // the save's error is the one to report; a file left behind is removed by clearQueue
            throw error
        }
        requestSync()
        return attachment
    }

    /// Deletes the local file and queues the remote delete; `updateHook` runs in the same
    /// transaction (to unlink the app's rows).
    public func deleteFile(id: String, updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws {
        let table = self.table
        let attachment: Attachment = try await writer.write { db in
            guard var a = try table.fetch(db, id: id) else { throw CourierError(.notFound, "no attachment with id \(id)") }
            a.state = .queuedDelete
            a.timestamp = Attachment.now()
            try table.upsert(db, a)
            try updateHook(db, a)
            return a
        }
        removeLocalFile(attachment)
        requestSync()
    }
}
