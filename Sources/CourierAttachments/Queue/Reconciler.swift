/// The seed's reconciliation of the watched state against the queue, as pure functions.
///
/// A watched id:
/// - with no record is an upstream creation: queue a download (none when the device does
///   not download).
/// - whose record is archived is restored: `SYNCED` when it has synced and its file is
///   still there; `QUEUED_UPLOAD` when it never synced but its local file is there (a save
///   whose upload had not finished); else queued for download (left archived when the
///   device does not download).
/// - whose record says `SYNCED` but whose file is gone is queued for download (a `SYNCED`
///   attachment always has its file), or archived when the device does not download.
///
/// A record no longer watched: `SYNCED` and `QUEUED_DOWNLOAD` are archived; `QUEUED_UPLOAD`
/// is archived only once it has synced (PowerSync's rule: a save not yet uploaded is never
/// dropped); `QUEUED_DELETE` is never archived (the remote delete the app asked for still
/// runs; the app unlinks its rows in the same transaction, so archiving it would lose it).
public enum Reconciler {
    /// The records to write (new or changed); unchanged records are left out.
    /// - Parameters:
    ///   - watched: the app's current referenced attachments.
    ///   - existing: every record of the queue.
    ///   - now: the timestamp for changed records.
    ///   - downloadAttachments: whether this device downloads (see ``AttachmentQueueOptions/downloadAttachments``).
    ///   - fileExists: whether a record's local file (its `localURI`) exists.
    public static func reconcile(watched: [WatchedAttachmentItem], existing: [Attachment], now: Int64, downloadAttachments: Bool = true,
                                 fileExists: (Attachment) -> Bool) -> [Attachment] {
        var byID: [String: Attachment] = [:]
        for a in existing { byID[a.id] = a }
        var changes: [Attachment] = []
        var seen = Set<String>()
        for item in watched where seen.insert(item.id).inserted {
            guard let record = byID[item.id] else {
                if downloadAttachments {
                    changes.append(Attachment(id: item.id, filename: item.resolvedFilename, state: .queuedDownload, timestamp: now, metaData: item.metaData))
                }
                continue
            }
            if let changed = restored(record, now: now, downloadAttachments: downloadAttachments, fileExists: fileExists) { changes.append(changed) }
        }
        return changes + orphaned(watchedIDs: seen, existing: existing, now: now)
    }

    /// What a watched record becomes, or `nil` when it stays as it is.
    static func restored(_ record: Attachment, now: Int64, downloadAttachments: Bool, fileExists: (Attachment) -> Bool) -> Attachment? {
        var record = record
        switch record.state {
        case .archived:
            let present = record.localURI != nil && fileExists(record)
            if record.hasSynced && present {
                record.state = .synced
            } else if !record.hasSynced && present {
                record.state = .queuedUpload
            } else if downloadAttachments {
                record.state = .queuedDownload
                record.localURI = nil
            } else {
                return nil
            }
        case .synced where !fileExists(record):
            record.state = downloadAttachments ? .queuedDownload : .archived
            record.localURI = nil
        default:
            return nil
        }
        record.timestamp = now
        return record
    }

    /// The records no longer watched that are archived now (see the rules above).
    /// - Parameters:
    ///   - watchedIDs: the ids the app references.
    ///   - existing: every record of the queue.
    ///   - now: the timestamp for archived records.
    public static func orphaned(watchedIDs: Set<String>, existing: [Attachment], now: Int64) -> [Attachment] {
        existing.compactMap { record in
            guard !watchedIDs.contains(record.id) else { return nil }
            switch record.state {
            case .synced, .queuedDownload: break
            case .queuedUpload where record.hasSynced: break
            case .queuedUpload, .queuedDelete, .archived: return nil
            }
            var archived = record
            archived.state = .archived
            archived.timestamp = now
            return archived
        }
    }

    /// What start-up verification (PowerSync's rules) changes in records whose file is not
    /// where `localURI` says: found under its `filename` → `localURI` repaired; a
    /// `QUEUED_UPLOAD` or `ARCHIVED` one → archived without a file; a `SYNCED` one →
    /// queued for download (archived when the device does not download). A `SYNCED` record
    /// with no `localURI` counts as one whose file is missing.
    /// - Parameters:
    ///   - records: every record of the queue.
    ///   - now: the timestamp for changed records.
    ///   - downloadAttachments: whether this device downloads.
    ///   - exists: whether local storage holds a file of that name.
    public static func verify(_ records: [Attachment], now: Int64, downloadAttachments: Bool = true,
                              exists: (String) -> Bool) -> [Attachment] {
        records.compactMap { record in
            guard record.localURI != nil || record.state == .synced else { return nil }
            if let uri = record.localURI, exists(uri) { return nil }
            var fixed = record
            fixed.timestamp = now
            if exists(record.filename) {
                fixed.localURI = record.filename
                return fixed
            }
            switch record.state {
            case .queuedUpload, .archived:
                fixed.state = .archived
            case .synced:
                fixed.state = downloadAttachments ? .queuedDownload : .archived
            case .queuedDownload, .queuedDelete:
                guard record.localURI != nil else { return nil }
            }
            fixed.localURI = nil
            return fixed
        }
    }

    /// Archived records past the cache limit, oldest first: to delete with their files.
    public static func expired(_ records: [Attachment], cacheLimit: Int) -> [Attachment] {
        let archived = records.filter { $0.state == .archived }.sorted { ($0.timestamp, $0.id) > ($1.timestamp, $1.id) }
        return Array(archived.dropFirst(max(0, cacheLimit)).reversed())
    }
}
