import Courier
import Foundation
import GRDB

/// Log-out and reachability: emptying the queue, and retrying at once when the network returns.
extension AttachmentQueue {
    /// Empties the queue (at log-out): stops starting transfers, cancels the engine's
    /// attachment downloads, waits for the running pass, then deletes every record of the
    /// attachments table and every file of local storage (`.partial` files too). Nothing
    /// is sent: queued uploads and remote deletes are dropped. The last watched set is
    /// forgotten too (it described what was cleared; the next emission brings the new
    /// one). The queue stays usable, and keeps syncing if it was.
    public func clearQueue() async throws {
        clearing = true
        defer { clearing = false }
        wakeTask?.cancel()
        wakeTask = nil
        try await cancelEngineDownloads()   // a running pass waiting on a download ends now
        await syncTask?.value
        try await cancelEngineDownloads()   // any the pass started before it saw `clearing`
        let table = self.table
        try await writer.write { db in try db.execute(sql: "DELETE FROM \(table.quoted)") }
        for upload in try await engineDatabase.uploads() where upload.id.hasPrefix(Self.downloadID("")) {
            try await engineDatabase.deleteUpload(id: upload.id)   // owed no more: the sweep aborts their parts
        }
        failures.removeAll()
        lastErrors.removeAll()
        notBefore.removeAll()
        lastWatchedIDs = nil
        do { try localStorage.removeAll() } catch {
            throw CourierError(.writeFailed, "the attachment records are gone but not every file could be removed", underlying: error)
        }
        logger.info("cleared the attachment queue")
    }

    /// Cancels every download the engine holds for an attachment (running, queued or left
    /// with a partial file by an earlier process): record and partial file go.
    func cancelEngineDownloads() async throws {
        guard let downloader else { return }
        for record in try await engineDatabase.allRecords() where record.id.hasPrefix(Self.downloadID("")) {
            try await downloader.cancel(id: record.id)
        }
    }

    /// Tells the queue the network is back (call it from the app's reachability monitor):
    /// every backoff is cleared and a pass starts at once, so every waiting transfer starts
    /// now. The failure counts (``failureCounts``) are reset too: a failure after this
    /// starts its backoff from the policy's base delay again. Does nothing more while the
    /// queue is stopped.
    public func notifyNetworkAvailable() {
        notBefore.removeAll()
        failures.removeAll()
        wakeTask?.cancel()
        wakeTask = nil
        requestSync()
    }
}
