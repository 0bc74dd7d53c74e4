import Courier
import Foundation

/// The queue's uploads go to the system with the downloads when the app is about to be
/// suspended (pass the queue to `AppLifecycle(…, uploads:)`): the pass under way stops, and
/// each upload waiting (begun or not; a file small enough for one S3 request waits for the
/// next pass) hands what it has not sent to upload tasks (``UploadHandingOff``). While its pieces are out the queue does not run that upload;
/// once they all ended it runs a pass, which sends what the server does not hold and
/// completes the upload.
extension AttachmentQueue: BackgroundUploading {
    public func handOffUploads(to folder: URL) async -> [UploadTaskRequest] {
        guard let storage = storage as? any UploadHandingOff else { return [] }
        handingOff += 1
        defer {
            handingOff -= 1
            // What the stopped pass left (downloads, deletes, small uploads) goes on; a pass
            // leaves the uploads whose pieces are with the system.
            if handingOff == 0 { requestSync() }
        }
        syncTask?.cancel()   // its transfers stop; their cancellation is not a failure (settle)
        await syncTask?.value
        let table = self.table
        let pending: [Attachment]
        do {
            pending = try await writer.read { db in try table.fetchAll(db, states: [.queuedUpload]) }
        } catch {
            logger.warning("the uploads to hand off could not be read; they stay with the queue: \(error)")
            return []
        }
        var requests: [UploadTaskRequest] = []
        for attachment in pending {
            // Only a plain file (the default local storage): a piece's body may be the file itself.
            guard let uri = attachment.localURI, let file = localStorage.plainFileURL(uri) else { continue }
            do {
                let handed = try await storage.handOffRemainder(of: file, attachment: attachment, journal: uploadJournal(for: attachment), folder: folder)
                // A new hand-off, before its tasks exist: its reports start afresh.
                if !handed.isEmpty { handOffReported[Self.downloadID(attachment.id)] = nil }
                requests += handed
            } catch {
                logger.warning("attachment \(attachment.id)'s upload stays with the queue: \(error)")
            }
        }
        return requests
    }

    /// The system's progress on an attachment's upload, told as the queue's own upload
    /// progress (``AttachmentQueueOptions/uploadProgress``): what the server confirmed plus
    /// what the system's tasks have sent since, while pieces are with the system.
    public func uploadHandOffProgress(uploadId: String, inFlight: Int64) async {
        let prefix = Self.downloadID("")
        guard let report = options.uploadProgress, uploadId.hasPrefix(prefix),
              let record = try? await engineDatabase.upload(id: uploadId)?.record,   // unreadable: this report is skipped, the next one comes
              let attachment = try? await attachment(id: String(uploadId.dropFirst(prefix.count))) else { return }   // the same
        // The reports come in tasks of their own: one computed before the last piece ended
        // can arrive after the hand-off's end, with less than was told (a hogged CI run: the
        // film's bar went from 50 MiB back to 34 MiB). Over: the queue's own pass tells it.
        guard let out = try? await engineDatabase.uploadHandOffPieces(uploadId: uploadId), !out.isEmpty else { return }   // unreadable: as above
        // Reports arrive from several tasks, not in order: only a larger count is told.
        let sent = min(record.sourceSize, record.confirmedBytes + inFlight)
        guard sent > handOffReported[uploadId, default: -1] else { return }
        handOffReported[uploadId] = sent
        report(attachment, UploadProgress(id: uploadId, sentBytes: sent, confirmedBytes: record.confirmedBytes, totalBytes: record.sourceSize,
                                          resumedFrom: record.confirmedBytes, bytesPerSecond: 0, secondsRemaining: nil))
    }

    public func uploadHandOffEnded(uploadId: String) async {
        guard uploadId.hasPrefix(Self.downloadID("")) else { return }
        // The mark stays (forgotten here, it let a report waiting on its reads, or an older
        // hand-off's late end, tell less than was told); a late report finds no piece out.
        requestSync()
    }

    /// The journal ids of the uploads whose pieces are with the system: a pass leaves them.
    func handedOffUploads() async -> Set<String> {
        // Unreadable: none is left out, and the upload itself refuses while pieces are out.
        Set(((try? await engineDatabase.uploadHandOffPieces()) ?? []).map(\.uploadId))
    }
}
