import Courier
import CourierAttachments
import Foundation

/// Downloads: a placeholder's first download, and the refresh of a present document whose
/// remote changed. Both land in the hidden folder first (`.courier/incoming/<path>`) and
/// are put in place under the document's exclusive lock only if nothing was written to it
/// meanwhile, so a download never replaces a local change; each records the remote
/// version it put in place.
extension MirrorContainer {
    /// Starts the download of a placeholder (a no-op for a present file).
    public func startDownloading(_ path: String, restart: Bool) async throws {
        let target = try url(path)
        guard let placeholder = Placeholder.read(for: target) else { return }
        failures.withLock { $0[path] = nil }
        if downloader == nil, transfers.withLock({ $0[path] != nil }), !restart { return }
        let fetch = try await prepareFetch(path, key: placeholder.key, restart: restart)
        watch(path) { [self] in
            let version = try await fetch()
            // Put in place only while the placeholder is still there: a write since then is
            // the document now, and the download is dropped.
            if try await adopt(path, target: target, when: { Placeholder.read(for: target) != nil }, record: {
                try await sync.noteDownloaded(path, version: version)
            }) {
                unlink(Placeholder.url(for: target).path)
            }
        }
    }

    /// Before a read of a present document: when the remote has a newer version than the
    /// one the local copy came from, and no local change is owed, puts it in place (the old
    /// file stays readable until the new one, whole, replaces it). Offline, a remote that
    /// is gone, an unknown base, or any failure: the local copy stands.
    public func refresh(_ path: String) async {
        guard let conditional = storage as? any ConditionalRemoteStorage, let target = try? url(path),   // an invalid path has nothing to refresh
              Placeholder.read(for: target) == nil, FileManager.default.fileExists(atPath: target.path) else { return }
        do {
            guard let row = try await sync.row(path), row.state == .synced, let base = row.base, !base.isEmpty else { return }
            let remote: String?
            do { remote = try await conditional.version(of: Attachment(id: path, filename: path, state: .queuedDownload)) } catch {
                logger.info("\(path): the remote cannot be asked (\(error)); reading the local copy")
                return
            }
            guard let remote, remote != base else { return }
            logger.info("\(path) changed on the remote; fetching the new version")
            let version = try await prepareFetch(path, key: path, restart: false)() ?? remote
            // Put in place only if no write came meanwhile (the row is still this synced one).
            _ = try await adopt(path, target: target, when: { try await sync.row(path) == row }, record: {
                try await sync.noteDownloaded(path, version: version)
            })
        } catch {
            logger.warning("\(path): refreshing from the remote failed (\(error)); reading the local copy")
        }
    }

    /// The transfer that fetches `key` into the incoming place of `path` and returns the
    /// remote version it fetched: through the engine (resumable, progress counted) when the
    /// storage allows it.
    func prepareFetch(_ path: String, key: String, restart: Bool) async throws -> @Sendable () async throws -> String? {
        let staged = try url(MirrorFolder.incoming(path))
        let attachment = Attachment(id: path, filename: key, state: .queuedDownload)
        if let downloader, let resumable = storage as? any ResumableRemoteStorage {
            let id = Self.downloadID(path)
            if restart, await downloader.runningIDs.contains(id) {
                try? await downloader.pause(id: id)   // a download that already ended needs no pause
            }
            try await downloader.enqueue(DownloadRequest(id: id, url: try await resumable.downloadURL(for: attachment), destination: enginePrefix + MirrorFolder.incoming(path)))
            let storage = self.storage, logger = self.logger
            return { [received] in
                defer { received.withLock { _ = $0.removeValue(forKey: path) } }
                let record = try await Self.follow(downloader, id: id) { bytes in received.withLock { $0[path] = bytes } }
                if let etag = record.etag { return etag }
                // A run that found the file already whole (a restart after the rename) ends
                // without the reply's validator: the remote tells its version instead.
                do { return try await (storage as? any ConditionalRemoteStorage)?.version(of: attachment) } catch {
                    logger.warning("\(path) is fetched, but its remote version is unknown (\(error)); its next upload is unconditional")
                    return nil
                }
            }
        }
        let storage = self.storage
        return {
            let version = try await (storage as? any ConditionalRemoteStorage)?.version(of: attachment)
            try await storage.download(attachment, to: staged)
            return version
        }
    }

    /// Puts the fetched file of `path` in place, under the document's exclusive lock, if
    /// `when` still holds there; `record` runs under the same lock, before the rename.
    /// Otherwise the fetched file is dropped. Returns whether it was put in place.
    func adopt(_ path: String, target: URL, when: () async throws -> Bool, record: () async throws -> Void) async throws -> Bool {
        let staged = try url(MirrorFolder.incoming(path))
        return try await withLock(path, target, .exclusive) {
            guard try await when() else {
                logger.info("\(path) was written while it downloaded; the download is dropped")
                unlink(staged.path)
                return false
            }
            try await record()
            try PartialFile.finalize(partial: staged, to: target)
            return true
        }
    }

    /// Waits for a download's end, passing on its bytes received, then forgets its record
    /// (the file stays). Returns the completed record.
    static func follow(_ downloader: Downloader, id: String, progress: @Sendable (Int64) -> Void) async throws -> DownloadRecord {
        for await event in downloader.events(for: id) {
            if case let .progress(p) = event { progress(p.bytesReceived) }
            if let end = event.end {
                let record = try end.completedRecord(id: id)
                try await downloader.cancel(id: id)   // on a completed download: the record goes, the file stays
                return record
            }
        }
        throw CourierError(.cancelled, "the downloader shut down before download \(id) finished")
    }

    /// Runs a download in the background (it puts the file in place itself); on failure the
    /// error is kept for ``state(of:)``.
    private func watch(_ path: String, _ transfer: @escaping @Sendable () async throws -> Void) {
        let token = UUID()
        let task = Task { [failures, transfers] in
            do {
                try await transfer()
            } catch is CancellationError {
            } catch let error as CourierError where error.code == .paused {
                // Restarted: the new transfer reports.
            } catch {
                let e = error as? CourierError ?? CourierError(.network, "download of \(path) failed", underlying: error)
                failures.withLock { $0[path] = e }
            }
            transfers.withLock { if $0[path]?.token == token { $0[path] = nil } }   // a restart's newer transfer stays
        }
        transfers.withLock { $0[path]?.task.cancel(); $0[path] = (token, task) }
    }
}
