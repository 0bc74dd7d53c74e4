/// The seed's reconciliation of the watched state against the queue, as a pure function.
///
/// - A watched id with no record is an upstream creation: queue a download.
/// - A watched id whose record is archived is restored: `SYNCED` when it has synced and
///   its file is still there, else queued for download.
/// - A watched id whose record says `SYNCED` but whose file is gone is queued for download
///   (a `SYNCED` attachment always has its file).
/// - A record no longer watched is archived, unless it waits to be uploaded or deleted.
public enum Reconciler {
    /// The records to write (new or changed); unchanged records are left out.
    public static func reconcile(watched: [WatchedAttachmentItem], existing: [Attachment], now: Int64,
                                 fileExists: (Attachment) -> Bool) -> [Attachment] {
        var byID: [String: Attachment] = [:]
        for a in existing { byID[a.id] = a }
        var changes: [Attachment] = []
        var seen = Set<String>()
        for item in watched where seen.insert(item.id).inserted {
            guard var record = byID[item.id] else {
                changes.append(Attachment(id: item.id, filename: item.resolvedFilename, state: .queuedDownload, timestamp: now, metaData: item.metaData))
                continue
            }
            switch record.state {
            case .archived:
                record.state = record.hasSynced && fileExists(record) ? .synced : .queuedDownload
                record.timestamp = now
                changes.append(record)
            case .synced where !fileExists(record):
                record.state = .queuedDownload
                record.localURI = nil
                record.timestamp = now
                changes.append(record)
            default:
                continue
            }
        }
        for record in existing where !seen.contains(record.id) {
            switch record.state {
            case .synced, .queuedDownload:
                var archived = record
                archived.state = .archived
                archived.timestamp = now
                changes.append(archived)
            case .queuedUpload, .queuedDelete, .archived:
                continue
            }
        }
        return changes
    }

    /// Archived records past the cache limit, oldest first: to delete with their files.
    public static func expired(_ records: [Attachment], cacheLimit: Int) -> [Attachment] {
        let archived = records.filter { $0.state == .archived }.sorted { ($0.timestamp, $0.id) > ($1.timestamp, $1.id) }
        return Array(archived.dropFirst(max(0, cacheLimit)).reversed())
    }
}
