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
        guard let uri = attachment.localURI, localStorage.exists(uri) else {
            throw CourierError(.fileNotFound, "the file of attachment \(attachment.id) is missing; nothing to upload")
        }
        let storage = self.storage
        let journal = uploadJournal(for: attachment)
        let size = try await localStorage.withReadableFile(uri) { file in
            if let resumable = storage as? any ResumableUploadStorage {
                try await resumable.upload(fileAt: file, attachment: attachment, journal: journal)
            } else {
                try await storage.upload(fileAt: file, attachment: attachment)
            }
            return PartialFile.length(at: file)
        }
        try await markSynced(attachment, localURI: uri, size: size)
    }

    /// The journal of an attachment's upload: its record in the app's database, so a
    /// killed upload goes on where the server stopped confirming.
    nonisolated func uploadJournal(for attachment: Attachment) -> UploadJournal {
        let report = options.uploadProgress
        var journal = UploadJournal(database: engineDatabase, id: Self.downloadID(attachment.id), maxBytesPerSecond: options.uploadBytesPerSecond, progress: report.map { report in
            { @Sendable progress in report(attachment, progress) }
        })
        journal.owner = downloader?.leaseOwner
        return journal
    }

    /// Aborts the S3 multipart uploads under the remote's prefix that are older than
    /// ``AttachmentQueueOptions/abandonedUploadAge`` and that no upload record still owes.
    func abortAbandonedUploads() async {
        guard let age = options.abandonedUploadAge, let s3 = storage as? S3RemoteStorage else { return }
        do {
            let owed = Set(try await engineDatabase.uploads().compactMap(\.remoteId))
            let aborted = try await s3.abortAbandonedUploads(olderThan: age, keeping: owed)
            if !aborted.isEmpty { logger.info("aborted \(aborted.count) abandoned multipart upload(s)") }
        } catch {
            // The sweep saves money, not data: the next start tries again.
            logger.warning("could not sweep abandoned multipart uploads: \(error)")
        }
    }

    /// Records a finished transfer, only if the attachment is still in the state the
    /// transfer started from (a delete or archive meanwhile wins).
    nonisolated func markSynced(_ attachment: Attachment, localURI: String?, size: Int64) async throws {
        var done = attachment
        done.state = .synced
        done.hasSynced = true
        done.localURI = localURI
        done.size = size
        done.timestamp = Attachment.now()
        let table = self.table
        let finished = done
        _ = try await writer.write { db in try table.update(db, finished, ifStateIs: attachment.state) }
    }

    /// Downloads into the local storage's staging folder (through the resumable engine when
    /// the remote allows), then hands the file to the local storage.
    nonisolated func download(_ attachment: Attachment) async throws {
        do {
            try await fetch(attachment)
        } catch let error as CourierError where error.code == .remoteNotFound || error.httpStatus == 404 {
            guard let named = try await withRemoteExtension(attachment) else { throw error }
            try await fetch(named)
        }
    }

    /// An id watched without a file name or extension is looked up as `<id>`; when a remote
    /// that lists finds exactly one `<id>.<ext>` instead (the app that saved it gave it one),
    /// that becomes its file name, in its record too. `nil`: nothing better to try.
    nonisolated func withRemoteExtension(_ attachment: Attachment) async throws -> Attachment? {
        guard (attachment.filename as NSString).pathExtension.isEmpty, let listing = storage as? any RemoteListing else { return nil }
        let stem = attachment.filename
        let matches = try await listing.list().filter { !$0.key.contains("/") && $0.key.hasPrefix(stem + ".") && ($0.key as NSString).deletingPathExtension == stem }
        guard matches.count == 1 else { return nil }
        var named = attachment
        named.filename = matches[0].key
        let table = self.table, record = named
        _ = try await writer.write { db in try table.update(db, record, ifStateIs: .queuedDownload) }
        logger.info("attachment \(attachment.id) was watched without an extension; the remote has it as \(record.filename)")
        return named
    }

    private nonisolated func fetch(_ attachment: Attachment) async throws {
        let filename = try SafePath.validateRelative(attachment.filename)
        if let downloader {
            let id = Self.downloadID(attachment.id)
            try await downloader.fetch(DownloadRequest(id: id, url: try await (storage as! any ResumableRemoteStorage).downloadURL(for: attachment),
                                                       destination: enginePrefix + filename, mediaId: attachment.id, mediaType: "attachment"))
        } else {
            try await storage.download(attachment, to: localStorage.stagingDirectory.appendingPathComponent(filename))
        }
        let size = try await localStorage.takeDownload(filename)
        // The file is in place before the record says SYNCED.
        try await markSynced(attachment, localURI: filename, size: size)
    }

    nonisolated func remoteDelete(_ attachment: Attachment) async throws {
        try await storage.delete(attachment)
        removeLocalFile(attachment)
        // An upload that never finished is owed no more (the sweep aborts its parts).
        try await engineDatabase.deleteUpload(id: Self.downloadID(attachment.id))
        let table = self.table
        try await writer.write { db in
            if let current = try table.fetch(db, id: attachment.id), current.state == .queuedDelete { try table.delete(db, id: attachment.id) }
        }
    }

    /// Removes the attachment's file (and what is staged for it) from local storage.
    nonisolated func removeLocalFile(_ attachment: Attachment) {
        for name in Set([attachment.localURI, attachment.filename].compactMap { $0 }) {
            do { try localStorage.remove(name) } catch {
                // A file left behind costs space only: clearQueue() or the next removal takes it.
                logger.warning("cannot remove the file of attachment \(attachment.id): \(error)")
            }
        }
    }
}
