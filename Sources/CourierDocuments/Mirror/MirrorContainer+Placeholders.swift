import Courier
import CourierAttachments
import Foundation

/// Placeholders: made from the remote's listing, and made again by evicting a document.
extension MirrorContainer {
    /// Creates a placeholder for every remote object that has no local file. Returns the
    /// paths it created.
    @discardableResult
    public func createPlaceholders() async throws -> [String] {
        guard let listing = storage as? any RemoteListing else {
            throw CourierError(.invalidArgument, "this remote cannot list its files; placeholders need an S3 or folder remote")
        }
        var created: [String] = []
        for object in try await listing.list() {
            guard let target = try? url(object.key) else { continue }   // a remote key that is no safe local path is skipped, never written
            if FileManager.default.fileExists(atPath: target.path) { continue }
            try Placeholder(key: object.key, size: object.size, etag: object.etag).write(for: target)
            created.append(object.key)
        }
        return created
    }

    /// A path this mirror has never seen (no file, no placeholder) is asked of the remote
    /// (`HEAD`, over any remote: one that cannot list, HTTP, is asked too). There: a
    /// placeholder is made, so the read downloads it. The remote's own 404: nothing is made,
    /// and the read is `E_FNF`.
    public func discover(_ path: String) async throws {
        let target = try url(path)
        guard !FileManager.default.fileExists(atPath: target.path), Placeholder.read(for: target) == nil,
              let conditional = storage as? any ConditionalRemoteStorage else { return }
        guard let version = try await conditional.presence(of: Attachment(id: path, filename: path, state: .queuedDownload)) else { return }
        try Durability.createFolder(target.deletingLastPathComponent())
        try Placeholder(key: path, size: version.size ?? 0, etag: version.etag).write(for: target)
    }

    /// Turns a downloaded document back into a placeholder, keeping nothing stale: the file,
    /// any partial, the engine's record and what the mirror remembered of it go. A document
    /// whose change is not uploaded yet is refused (`E_INVALID_STATE`): evicting it would
    /// lose the change.
    public func evict(_ path: String) async throws {
        let target = try url(path)
        guard FileManager.default.fileExists(atPath: target.path) else {
            if Placeholder.read(for: target) != nil { return }
            throw CourierError(.fileNotFound, "\(path) is not here")
        }
        try await withLock(path, target, .exclusive) {
            // Checked under the lock: a write cannot land between the check and the unlink.
            let row = try await sync.row(path)
            if let row, row.state != .synced {
                throw CourierError(.invalidState, "\(path) has a change not uploaded yet; evicting it would lose the change")
            }
            let base = row?.base.flatMap { $0.isEmpty ? nil : $0 }
            try Placeholder(key: path, size: PartialFile.length(at: target), etag: base).write(for: target)
            unlink(target.path)
            unlink(root.appendingPathComponent(MirrorFolder.incoming(path)).path + ".partial")
            try await sync.forget(path)
        }
        if let downloader { try? await downloader.cancel(id: Self.downloadID(path)) }   // no engine record for this path is what we want
        failures.withLock { $0[path] = nil }
    }
}
