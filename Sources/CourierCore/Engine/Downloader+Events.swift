import Foundation
import GRDB

/// What subscribers see: per-download streams seeded from the store, ending with one final event.
extension Downloader {
    /// Fetches `request`'s file to its destination, then forgets the record, leaving the
    /// file: for a caller that keeps its own account of what it fetched (attachments,
    /// documents, media). While it runs it is an ordinary download (it resumes after a
    /// relaunch); when it fails, the record stays with its bytes, so asking again resumes.
    @discardableResult
    public func fetch(_ request: DownloadRequest) async throws -> DownloadRecord {
        try await enqueue(request)
        return try await finishAndForget(id: request.id)
    }

    /// Waits for download `id` like ``waitForCompletion(id:)``, then deletes its record
    /// (the final file stays). The second half of ``fetch(_:)``.
    @discardableResult
    public nonisolated func finishAndForget(id: String) async throws -> DownloadRecord {
        let record = try await waitForCompletion(id: id)
        try await cancel(id: id)   // on a completed download: the record goes, the file stays
        return record
    }

    /// Waits until the download completes, and returns its record. Throws its error when
    /// it fails, ``CourierError/Code/paused`` when it pauses, and
    /// ``CourierError/Code/cancelled`` when it is cancelled: what its one final event says
    /// (``DownloadEnd/completedRecord(id:)``).
    @discardableResult
    public nonisolated func waitForCompletion(id: String) async throws -> DownloadRecord {
        for await event in events(for: id) {
            if let end = event.end { return try end.completedRecord(id: id) }
        }
        throw CourierError(.cancelled, "the downloader shut down before download \(id) finished")
    }

    // MARK: Events

    /// The events of one download. It first yields the persisted progress and state (and
    /// the final event at once, for a download that already ended), then live events, and
    /// finishes after a final event. After ``shutdown()`` it yields what is stored and ends.
    public nonisolated func events(for id: String) -> AsyncStream<DownloadEvent> {
        let hub = context.hub
        let (key, stream, tombstone) = hub.subscribe(id: id)
        if let tombstone {
            hub.seed(key, with: [tombstone])
            return stream
        }
        let database = context.database
        EngineExecutor.current.task {
            var snapshot: [DownloadEvent] = []
            if let record = try? await database.record(id: id) {   // no snapshot when the store cannot be read: live events still come
                snapshot.append(.progress(DownloadProgress(id: id, bytesReceived: record.bytesReceived, totalBytes: record.totalBytes)))
                snapshot.append(Self.persistedEvent(record))
            }
            hub.seed(key, with: snapshot)
        }
        return stream
    }

    /// The live events of one download, none replayed from the store: for a watcher that
    /// subscribes before it enqueues or resumes the download (the CLI), so nothing said first
    /// is missed and no end of an earlier run is taken for this one's. It finishes after a
    /// final event, or at ``shutdown()``.
    package nonisolated func liveEvents(for id: String) -> AsyncStream<DownloadEvent> {
        let hub = context.hub
        let (key, stream, _) = hub.subscribe(id: id)
        hub.seed(key, with: [])
        return stream
    }

    /// The events of every download, live, until ``shutdown()`` (one asked for after it ends
    /// at once, after what is stored when `replayingStored`). The stream buffers without
    /// bound (no final event is ever dropped), so keep consuming it.
    ///
    /// With `replayingStored`, it first yields each stored record's progress and state (its
    /// end, for one that ended), then the live events, none of them older than what was
    /// replayed: a screen that starts from it shows every bar where it stands. (For a
    /// screen, `CourierObservation`'s `DownloadList` and `DownloadsFeed` do this and coalesce.)
    public nonisolated func events(replayingStored: Bool = false) -> AsyncStream<DownloadEvent> {
        let hub = context.hub
        let (key, stream) = hub.subscribeAll(seeded: !replayingStored)
        guard replayingStored else { return stream }
        let database = context.database
        EngineExecutor.current.task {
            let records = (try? await database.allRecords()) ?? []   // unreadable: live events still come
            hub.seed(key, with: records.flatMap { record in
                [.progress(DownloadProgress(id: record.id, bytesReceived: record.bytesReceived, totalBytes: record.totalBytes)),
                 Self.persistedEvent(record)]
            })
        }
        return stream
    }

    /// The event that tells a subscriber where a persisted record stands: its end when it
    /// ended (completed, failed, paused), else its state.
    static func persistedEvent(_ record: DownloadRecord) -> DownloadEvent {
        switch record.state {
        case .completed: return .ended(id: record.id, .completed(record))
        case .failed: return .ended(id: record.id, .failed(record.lastError ?? CourierError(.invalidState, "failed")))
        case .paused: return .ended(id: record.id, .paused(record.lastError))
        case .queued, .downloading, .handedOff: return .stateChanged(id: record.id, state: record.state, error: record.lastError)
        }
    }
}
