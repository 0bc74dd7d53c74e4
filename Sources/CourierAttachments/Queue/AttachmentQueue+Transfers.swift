import Courier
import Foundation
import GRDB

/// One attachment's transfer: upload, download through the engine, remote delete, local removal.
extension AttachmentQueue {
    /// Performs one transfer; returns its error, if any.
    nonisolated func transfer(_ attachment: Attachment) async -> (any Error)? {
        do {
            switch attachment.state {
            case .queuedUpload: try await upload(attachment)
            case .queuedDownload: try await download(attachment)
            case .queuedDelete: try await remoteDelete(attachment)
            case .synced, .archived: break
            }
            return nil
        } catch {
            return error
        }
    }

    nonisolated func upload(_ attachment: Attachment) async throws {
        guard let file = localURL(for: attachment), FileManager.default.fileExists(atPath: file.path) else {
            throw CourierError(.fileNotFound, "the file of attachment \(attachment.id) is missing; nothing to upload")
        }
        try await storage.upload(fileAt: file, attachment: attachment)
        try await markSynced(attachment, localURI: attachment.localURI, file: file)
    }

    /// Records a finished transfer, only if the attachment is still in the state the
    /// transfer started from (a delete or archive meanwhile wins).
    nonisolated func markSynced(_ attachment: Attachment, localURI: String?, file: URL) async throws {
        var done = attachment
        done.state = .synced
        done.hasSynced = true
        done.localURI = localURI
        done.size = PartialFile.length(at: file)
        done.timestamp = Attachment.now()
        let table = self.table
        let finished = done
        _ = try await writer.write { db in try table.update(db, finished, ifStateIs: attachment.state) }
    }

    nonisolated func download(_ attachment: Attachment) async throws {
        let filename = try SafePath.validateRelative(attachment.filename)
        let target = directory.appendingPathComponent(filename)
        if let downloader {
            let id = Self.downloadID(attachment.id)
            try await downloader.fetch(DownloadRequest(id: id, url: try await (storage as! any ResumableRemoteStorage).downloadURL(for: attachment),
                                                       destination: filename, mediaId: attachment.id, mediaType: "attachment"))
        } else {
            try await storage.download(attachment, to: target)
        }
        // The file is in place before the record says SYNCED.
        try await markSynced(attachment, localURI: filename, file: target)
    }

    nonisolated func remoteDelete(_ attachment: Attachment) async throws {
        try await storage.delete(attachment)
        removeLocalFile(attachment)
        let table = self.table
        try await writer.write { db in
            if let current = try table.fetch(db, id: attachment.id), current.state == .queuedDelete { try table.delete(db, id: attachment.id) }
        }
    }

    nonisolated func removeLocalFile(_ attachment: Attachment) {
        if let url = localURL(for: attachment) { unlink(url.path) }
        unlink(directory.appendingPathComponent(attachment.filename).path + ".partial")
    }
}
