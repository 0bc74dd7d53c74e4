import Foundation
import GRDB

/// Adding downloads: validated first, written in one transaction, files deleted only after it commits.
extension Downloader {
    /// Adds a download, or brings an existing one with the same id back to life: a paused,
    /// failed or interrupted one resumes; a completed one whose final file is gone or of the
    /// wrong size downloads again; a completed one whose file is in place is returned as is.
    /// Throws ``CourierError/Code/leased`` when another process runs it.
    @discardableResult
    public func enqueue(_ request: DownloadRequest) async throws -> DownloadRecord {
        let (record, disposition) = try await enqueueAll([request])[0]
        if disposition == .leasedElsewhere { throw Self.leasedError(record) }
        return record
    }

    /// What ``enqueue(batch:)`` did with one request.
    public enum EnqueueDisposition: Sendable, Equatable {
        /// Queued (new, or an existing record brought back).
        case queued
        /// Completed before, with its final file in place: nothing to do.
        case alreadyComplete
        /// Already running in this downloader.
        case alreadyRunning
        /// Another process holds its lease and runs it; left to that one.
        case leasedElsewhere
        /// Handed off to the system (a background task fetches the rest); it comes back
        /// through its `BackgroundTransfers` (adopted, or taken back).
        case handedOff
    }

    /// Adds many downloads in one database transaction (a list of thousands costs one
    /// commit, not thousands). Each request is validated first; an invalid one, or an id
    /// given twice, throws before anything is written.
    @discardableResult
    public func enqueue(batch requests: [DownloadRequest]) async throws -> [(record: DownloadRecord, disposition: EnqueueDisposition)] {
        try await enqueueAll(requests)
    }

    struct Prepared: Sendable {
        var request: DownloadRequest
        var id: String
        var destination: String
        var partial: String
        var sha: String?
        var redactedURL: String
        var connections: Int
    }

    func enqueueAll(_ requests: [DownloadRequest]) async throws -> [(record: DownloadRecord, disposition: EnqueueDisposition)] {
        try checkOpen()
        var seen = Set<String>()
        let prepared = try requests.map { request -> Prepared in
            let id = try SafePath.validateIdentifier(request.id)
            guard seen.insert(id).inserted else { throw CourierError(.invalidArgument, "the id \(id) is given twice") }
            _ = try URLPolicy.validate(request.url)
            let destination = try SafePath.validateRelative(request.destination)
            if let size = request.expectedSize, size < 0 { throw CourierError(.invalidArgument, "the expected size of \(id) is negative (\(size))") }
            return Prepared(request: request, id: id, destination: destination, partial: PartialFile.partialPath(of: destination),
                            sha: try request.sha256.map(SHA256Hex.validate), redactedURL: Redactor.redact(url: request.url),
                            connections: max(1, min(request.connections ?? context.configuration.connectionsPerDownload, 16)))
        }
        let runningHere = Set(running.keys)
        let owner = context.owner
        let root = context.configuration.rootDirectory
        let upserts = try await context.database.write { db -> [Upsert] in
            try prepared.map { p in try Self.upsert(p, in: db, runningHere: runningHere, owner: owner, root: root) }
        }
        // Files go only once the rows that stopped claiming them are committed: a batch that
        // rolls back leaves every partial where it was. At once, in this step (a run of the
        // new request, started at the next suspension, makes its file under the same name),
        // then for good: each folder synced once, so a power cut cannot bring an old name back.
        let replaced = upserts.filter { !$0.discard.isEmpty }
        let discarded = replaced.flatMap(\.discard).map { root.appendingPathComponent($0) }.filter { unlink($0.path) == 0 }
        let folders = Set(discarded.map { $0.deletingLastPathComponent() })
        if !folders.isEmpty {
            await context.bestEffort("syncing the folders of replaced partials", id: replaced.map(\.record.id).joined(separator: ",")) {
                try await Blocking.run { for folder in folders { try Durability.syncFolder(folder) } }
            }
        }
        let results = upserts.map { (record: $0.record, disposition: $0.disposition) }
        for (p, result) in zip(prepared, results) where result.disposition == .queued {
            wholePartials.remove(p.id)
            // The full URL (with its secrets) stays in this process only.
            liveURLs[p.id] = p.redactedURL != p.request.url ? p.request.url : nil
            context.hub.publish(.stateChanged(id: p.id, state: .queued, error: nil))
            adopt(result.record)
        }
        pump()
        return results
    }

    /// What one request did to its row, and the files (relative paths) to delete once the
    /// batch's transaction has committed.
    struct Upsert {
        var record: DownloadRecord
        var disposition: EnqueueDisposition
        var discard: [String] = []
    }

    /// One request's row, inside the batch's transaction. Touches no file: what is to be
    /// deleted is returned.
    static func upsert(_ p: Prepared, in db: Database, runningHere: Set<String>, owner: LeaseOwner, root: URL) throws -> Upsert {
        guard var existing = try DownloadRecord.fetch(db, id: p.id) else {
            var r = DownloadRecord(id: p.id, remoteUrl: p.redactedURL, localFinalPath: p.destination, partialPath: p.partial,
                                   mediaId: p.request.mediaId, mediaType: p.request.mediaType, expectedSHA256: p.sha, priority: p.request.priority)
            r.connections = p.connections
            r.expectedBytes = p.request.expectedSize
            try r.insert(db)
            return Upsert(record: r, disposition: .queued)
        }
        if runningHere.contains(p.id) { return Upsert(record: existing, disposition: .alreadyRunning) }
        // Never requeued behind the hand-off's back: its partial may hold a half-done splice
        // past the kept bytes, which only the end of the hand-off cuts off.
        if existing.state == .handedOff { return Upsert(record: existing, disposition: .handedOff) }
        if owner.isBlocked(by: existing) { return Upsert(record: existing, disposition: .leasedElsewhere) }
        let stored = existing
        var discard: [String] = []
        let final = root.appendingPathComponent(p.destination, isDirectory: false)
        // The finished file in place is this request's file: same place, same URL (secrets
        // aside, so a re-signed link is the same download), same checksum, whole.
        let sameChecks = (p.sha == nil || existing.expectedSHA256 == p.sha) && (p.request.expectedSize == nil || existing.totalBytes == p.request.expectedSize)
        let finishedHere = existing.state == .completed && existing.localFinalPath == p.destination && existing.remoteUrl == p.redactedURL && sameChecks
            && existing.totalBytes.map { PartialFile.length(at: final) == $0 && FileManager.default.fileExists(atPath: final.path) } == true
        if finishedHere, !p.request.revalidate {
            return Upsert(record: existing, disposition: .alreadyComplete)
        }
        if existing.partialPath != p.partial {
            discard.append(existing.partialPath)
        }
        // No unlink of the partial otherwise: the record's bytesReceived lags the file by up
        // to a second, and ResumePlan already discards kept bytes nothing ties to a version.
        // Another URL is another file: kept bytes of the old one are never spliced onto it.
        // A size given now that the record knows to be another one (a record without one,
        // from before v9, adopts it and keeps its bytes).
        let sizeChanged = p.request.expectedSize.map { size in existing.expectedBytes.map { $0 != size } ?? existing.totalBytes.map { $0 != size } ?? false } ?? false
        let otherChecks = existing.expectedSHA256 != (p.sha ?? existing.expectedSHA256) || sizeChanged
        let fresh = existing.state == .completed || existing.localFinalPath != p.destination || existing.remoteUrl != p.redactedURL || otherChecks
        // Revalidating a finished file: its validators go with the request from zero; the
        // file stays until a new version replaces it (or a 304 keeps it).
        if finishedHere {
            existing.heldEtag = existing.etag; existing.heldLastModified = existing.lastModified; existing.heldBytes = existing.totalBytes
        } else if fresh {
            existing.heldEtag = nil; existing.heldLastModified = nil; existing.heldBytes = nil
        }
        existing.remoteUrl = p.redactedURL
        existing.localFinalPath = p.destination
        existing.partialPath = p.partial
        existing.mediaId = p.request.mediaId ?? existing.mediaId
        existing.mediaType = p.request.mediaType ?? existing.mediaType
        existing.expectedSHA256 = p.sha ?? existing.expectedSHA256
        existing.expectedBytes = p.request.expectedSize ?? (fresh ? nil : existing.expectedBytes)   // another file: the old size no longer applies
        existing.priority = p.request.priority
        existing.connections = p.connections
        existing.state = .queued
        existing.attemptCount = 0
        existing.bytesDiscarded = 0
        existing.lastErrorCode = nil
        existing.lastErrorMessage = nil
        existing.leaseExpiresAt = nil   // its owner stays, as the partial's last writer (DownloadRecord+Transitions)
        if fresh {
            existing.bytesReceived = 0; existing.etag = nil; existing.lastModified = nil; existing.totalBytes = nil; existing.resumable = true
            try Segment.filter(Segment.Columns.downloadId == p.id).deleteAll(db)
            discard.append(p.partial)
        }
        existing.updatedAt = Date()
        try existing.updateRow(db, from: stored)
        return Upsert(record: existing, disposition: .queued, discard: discard)
    }
}
