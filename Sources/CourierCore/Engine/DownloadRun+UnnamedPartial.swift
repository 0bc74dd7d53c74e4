import Foundation

/// When a small download's unnamed partial (`Files/PartialFile+Unnamed.swift`) gets a name,
/// and how no name outlives the download. Another process cancels a download by deleting
/// its partial, then its record; a file without a name is out of its reach, so every name
/// this run gives is checked against the record after it exists, and taken back when the
/// download is gone or someone else's. (A cancel that lands after that check finds the
/// name, or the run, stopped, deletes it: as for any named partial.)
extension DownloadRun {
    /// Names `file` (a no-op when it has one), then makes sure the download is still this
    /// run's: the record is read once the name exists, in a task of its own (a pause has
    /// cancelled this one); gone or taken meanwhile, the name is taken back and the run
    /// stops (``ExternalStop``). A name already at the path is another run's: while the
    /// download is this run's, that run is a stale one (its lease ran out) and its file
    /// makes way; else this run stops. Throws the file system's error when it refuses.
    func nameUnnamed(_ file: PartialFile) async throws {
        guard file.isUnnamed else { return }
        if try !file.materialize() {
            guard await stillMine() else { throw ExternalStop() }
            let stale = file.url
            try await Blocking.run { try PartialFile.deleteDurably(stale) }   // its name must not come back over this one's
            guard try file.materialize() else { throw ExternalStop() }
        }
        guard await stillMine() else {
            file.unname()
            await context.syncFolder(ofDeleted: file.url, id: id)
            throw ExternalStop()
        }
        // From here it is a named partial like any: a later stop with the record gone
        // deletes it (``DownloadRun/dropOrphanedPartial()``).
        openedPartial.set(file.url, file.openIdentity)
    }

    /// Whether the record is still this run's (downloading, under no other lease), read in
    /// a task a stop does not cancel. Unreadable: yes (as for a named partial, whose next
    /// guarded write finds out).
    func stillMine() async -> Bool {
        guard case let .some(stored) = await recordPastStop() else { return true }   // unreadable: kept, as a named partial is
        guard let record = stored else { return false }
        return record.state == .downloading && !context.owner.isBlocked(by: record)
    }

    /// On the way out of a failed or stopped body: names the partial so what arrived is
    /// kept (a pause, a hand-off, a retry resume from it; a path that discards it deletes it
    /// by that name), as ``nameUnnamed(_:)`` does. `false`: nothing is kept (the file system
    /// refused the name; the bytes go with the descriptor, and nothing recorded them).
    func keepUnnamedBytes(_ file: PartialFile) async throws -> Bool {
        do {
            try await nameUnnamed(file)
            return true
        } catch let stop as ExternalStop {
            throw stop
        } catch {
            context.logger.warning("could not name the partial file: \(error); its bytes are not kept", metadata: ["id": "\(id)"])
            return false
        }
    }

    /// Puts a whole unnamed partial in place: synced through its descriptor, linked at the
    /// final name where nothing is there (one folder entry, where a name and a rename are
    /// two), the folder synced: the order a rename has. Returns the identity of the file now
    /// at the final path (for the take-back). `nil` when something is at the final path (a
    /// user's older version): nothing was linked; the caller names the partial with
    /// ``nameUnnamed(_:)`` and renames it as any partial, so a cancelled download never
    /// replaces the user's file.
    func linkUnnamed(_ file: PartialFile, at final: URL) async throws -> (device: UInt64, inode: UInt64)? {
        let fd = file.fd, partial = file.url
        let placed = try await Blocking.run { try PartialFile.link(fd, partial: partial, final: final) }
        if placed != nil { try? file.close() }   // nothing is staged (flushed before the finish): this only releases the descriptor
        return placed
    }
}
