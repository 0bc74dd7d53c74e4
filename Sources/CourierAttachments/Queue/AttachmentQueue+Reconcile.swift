import Courier
import Foundation
import GRDB

/// Keeping the records in step with the app's data and with the files: reconciling the
/// watched set, start-up verification, and the archive cache.
extension AttachmentQueue {
    /// Reconciles the app's current set of referenced attachments with the queue (seed 001):
    /// queues downloads, archives, restores, and expires the archive cache. The set is kept
    /// and re-applied after each sync pass (see ``Reconciler``).
    public func reconcile(_ items: [WatchedAttachmentItem]) async throws {
        var named = items
        if let strategy = options.strategy {
            for i in named.indices where named[i].filename?.isEmpty ?? true {
                named[i].filename = strategy.resolveNewAttachmentFilename(attachmentId: named[i].id, fileExtension: named[i].fileExtension)
            }
        }
        let watched = named
        lastWatchedIDs = Set(watched.map(\.id))
        let table = self.table
        let storage = self.localStorage
        let downloads = options.downloadAttachments
        let changes = try await writer.write { db -> Int in
            let existing = try table.fetchAll(db)
            let updates = Reconciler.reconcile(watched: watched, existing: existing, now: Attachment.now(), downloadAttachments: downloads) { a in
                a.localURI.map { storage.exists($0) } ?? false
            }
            for a in updates { try table.upsert(db, a) }
            return updates.count
        }
        if changes > 0 { logger.debug("reconciled \(changes) attachments") }
        try await expireCache()
        requestSync()
    }

    /// After a pass: archives what the last watched set no longer references (an upload
    /// that finished for an id the app dropped meanwhile). Archiving starts no transfer, so
    /// it asks for no further pass; the pass's cache expiry runs next. Returns how many
    /// records changed.
    @discardableResult
    func archiveUnwatched() async throws -> Int {
        guard let watchedIDs = lastWatchedIDs else { return 0 }
        let table = self.table
        let changes = try await writer.write { db -> Int in
            let updates = Reconciler.orphaned(watchedIDs: watchedIDs, existing: try table.fetchAll(db), now: Attachment.now())
            for a in updates { try table.upsert(db, a) }
            return updates.count
        }
        if changes > 0 { logger.debug("archived \(changes) attachments no longer watched") }
        return changes
    }

    /// Checks every record against local storage (PowerSync's start-up rules; run by
    /// ``startSync(watching:)`` and ``startSync()``). For a record with a `localURI`: the
    /// file is there → nothing; it is there under the record's `filename` → `localURI`
    /// repaired; else a `QUEUED_UPLOAD` or `ARCHIVED` record is archived without a file,
    /// and a `SYNCED` one is queued for download (archived, when
    /// ``AttachmentQueueOptions/downloadAttachments`` is false). Returns the records changed.
    @discardableResult
    public func verifyAttachments() async throws -> [Attachment] {
        let table = self.table
        let storage = self.localStorage
        let downloads = options.downloadAttachments
        let changed = try await writer.write { db -> [Attachment] in
            let updates = Reconciler.verify(try table.fetchAll(db), now: Attachment.now(), downloadAttachments: downloads) { storage.exists($0) }
            for a in updates { try table.upsert(db, a) }
            return updates
        }
        if !changed.isEmpty { logger.info("verification changed \(changed.count) attachments") }
        return changed
    }

    func expireCache() async throws {
        let table = self.table
        let limit = options.archivedCacheLimit
        let expired: [Attachment] = try await writer.write { db in
            let gone = Reconciler.expired(try table.fetchAll(db, states: [.archived]), cacheLimit: limit)
            for a in gone { try table.delete(db, id: a.id) }
            return gone
        }
        for a in expired {
            removeLocalFile(a)
            if let downloader { try? await downloader.cancel(id: Self.downloadID(a.id)) }   // no engine record left for it is what we want
        }
    }
}
