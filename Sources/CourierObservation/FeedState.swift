import CourierCore
import Foundation

/// The snapshots a feed keeps and what changed since its last update: the pure half of
/// ``DownloadsFeed``.
struct FeedState: Sendable {
    let selection: DownloadSelection
    private(set) var snapshots: [String: DownloadSnapshot] = [:]
    /// Ids in the order they were asked for (then by id).
    private(set) var order: [String] = []
    private var dirty: Set<String> = []
    private var removed: [String] = []
    /// Ids known to be outside the selection (read once).
    private var excluded: Set<String> = []

    init(selection: DownloadSelection) { self.selection = selection }

    /// What ``apply(_:)`` did with an event.
    enum Applied: Equatable { case applied, ignored, needsRecord }

    /// Takes the stored records in (the first update's snapshots).
    mutating func load(_ records: [DownloadRecord]) {
        for record in records { insert(record) }
    }

    /// Adds a download from its record (when the selection takes it); `false` if it does not.
    @discardableResult
    mutating func insert(_ record: DownloadRecord) -> Bool {
        guard selection.contains(id: record.id, mediaId: record.mediaId) else { excluded.insert(record.id); return false }
        excluded.remove(record.id)
        let snapshot = DownloadSnapshot(record: record)
        if snapshots.updateValue(snapshot, forKey: record.id) == nil {
            let at = order.firstIndex { other in
                let o = snapshots[other]!
                return (o.createdAt, o.id) > (snapshot.createdAt, snapshot.id)
            } ?? order.endIndex
            order.insert(record.id, at: at)
        }
        dirty.insert(record.id)
        removed.removeAll { $0 == record.id }
        return true
    }

    /// Applies one of the engine's events; `.needsRecord` when the download is new to the
    /// feed and may belong to it (read its record, ``insert(_:)`` it, apply again).
    mutating func apply(_ event: DownloadEvent) -> Applied {
        let id = event.id
        guard var snapshot = snapshots[id] else {
            if excluded.contains(id), !isNewRequest(event) { return .ignored }
            if case .ended(_, .cancelled) = event { return .ignored }
            if !selection.needsRecord, !selection.contains(id: id, mediaId: nil) { return .ignored }
            return .needsRecord
        }
        if case .ended(_, .cancelled) = event {
            snapshots[id] = nil
            order.removeAll { $0 == id }
            dirty.remove(id)
            removed.append(id)
            return .applied
        }
        let before = snapshot
        snapshot.apply(event)
        if snapshot != before {
            snapshots[id] = snapshot
            dirty.insert(id)
        }
        return .applied
    }

    /// A download asked for again under an id once left out may now belong (a new media id).
    private func isNewRequest(_ event: DownloadEvent) -> Bool {
        if case .stateChanged(_, .queued, _) = event { return true }
        return false
    }

    /// What changed since the last call, or `nil` when nothing did (`initial`: always an update).
    mutating func flush(initial: Bool = false) -> DownloadsFeed.Update? {
        guard initial || !dirty.isEmpty || !removed.isEmpty else { return nil }
        let changed = order.filter { dirty.contains($0) }.compactMap { snapshots[$0] }
        let update = DownloadsFeed.Update(all: order.compactMap { snapshots[$0] }, changed: changed, removed: removed, isInitial: initial)
        dirty.removeAll()
        removed.removeAll()
        return update
    }
}
