import Foundation

/// A fresh small download's partial file, made without a name where Linux allows it
/// (`O_TMPFILE`) and given its name (``materialize()``) before anything relies on it.
///
/// Naming a new file holds its folder's lock while the file system finds a free inode; on
/// ext4, after many files were deleted, that search is most of the work, so downloads that
/// create files in one folder at once wait on each other (2,000 files of 64 KiB over
/// HTTPS/2: 16 % of the samples spinning on that lock; BENCHMARKS.md, "What profiling
/// found"). An unnamed file finds its inode without the lock; linking the name later only
/// adds an entry.
///
/// Used only where the engine keeps nothing of a partial across a kill anyway (a download
/// from zero of at most 1 MiB, whose validators are recorded with its completion): a kill
/// while it is unnamed loses at most those bytes, and the file system frees them. Small
/// bodies skip direct I/O: their one copy into the page cache costs less than a second
/// descriptor.
extension PartialFile {
    /// A new, empty partial for `url`, unnamed where the system allows it, else named as
    /// ``init(url:bufferSize:)`` makes it. A file already at `url` is deleted: a download
    /// from zero keeps none of it.
    convenience init(unnamedAt url: URL, bufferSize: Int) throws {
        #if os(Linux)
        try Durability.createFolder(url.deletingLastPathComponent())
        if unlink(url.path) != 0, errno != ENOENT { throw Self.error(errno, "delete", url) }
        let fd = Self.canLink ? open(url.deletingLastPathComponent().path, Self.tmpFileFlag | O_WRONLY | O_CLOEXEC, 0o644) : -1
        if fd >= 0 {
            self.init(url: url, fd: fd, writingAt: 0, bufferSize: bufferSize, directIO: false)
            isUnnamed = true
            return
        }
        // No O_TMPFILE on this file system (EOPNOTSUPP, EISDIR on old kernels): a name now.
        #endif
        try self.init(url: url, bufferSize: bufferSize, directIO: false)
    }

    /// Gives an unnamed partial its name (``url``); `true` for a named one. `false` when
    /// something else took the name meanwhile: only another run of the same download makes
    /// that file, so it is left alone and this run is no longer the download's (the caller
    /// stops). Staged bytes stay staged: flush before reading the file by its name.
    func materialize() throws -> Bool {
        guard isUnnamed else { return true }
        #if os(Linux)
        guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, url.path, AT_SYMLINK_FOLLOW) == 0 else {
            if errno == EEXIST { return false }
            throw Self.error(errno, "name", url)
        }
        #endif
        isUnnamed = false
        return true
    }

    #if os(Linux)
    /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`), which Glibc's module does not export.
    static let tmpFileFlag: Int32 = 0o20_000_000 | O_DIRECTORY
    /// Whether this process can name an unnamed file (through `/proc/self/fd`).
    static let canLink: Bool = access("/proc/self/fd", X_OK) == 0
    #endif
}

extension PartialFile {
    /// Takes back the name ``materialize()`` gave, when the path still names this file: the
    /// download turned out not to be this run's any more, and a name left behind would
    /// outlive it (or stand in the way of the run it is now). The bytes stay with the
    /// descriptor and go when it closes.
    func unname() {
        #if os(Linux)
        var mine = stat(), there = stat()
        guard fd >= 0, fstat(fd, &mine) == 0, lstat(url.path, &there) == 0,
              mine.st_dev == there.st_dev, mine.st_ino == there.st_ino else { return }
        if unlink(url.path) == 0 { isUnnamed = true }
        #endif
    }
}

extension PartialFile {
    /// Where a finished partial went (``place(_:partial:final:)``, ``placeStep(_:_:)``).
    enum Placement {
        /// At the final path, where nothing was: the file's identity, to tell later whether
        /// the path still names it.
        case new(device: UInt64, inode: UInt64)
        /// At the final path, over a file that was there (never taken back).
        case replaced
        /// Not placed: another run of the download holds the partial's name.
        case nameTaken
    }

    /// The blocking step that syncs a finished partial and puts it at `final`, its folder
    /// synced after. An unnamed one (handed over here) gets the final name directly where
    /// nothing is there: one folder entry added, instead of a name and a rename.
    static func placeStep(_ moving: (partial: URL, final: URL), _ unsynced: PartialFile?) throws -> @Sendable () throws -> Placement {
        let partial = moving.partial, final = moving.final
        if let unsynced, unsynced.isUnnamed {
            let fd = try unsynced.handOver()
            return { try place(fd, partial: partial, final: final) }
        }
        let fd = try unsynced?.handOver()
        return {
            if let fd { try syncAndClose(fd, partial) } else { try sync(at: partial) }
            let replacing = identity(at: final) != nil
            try finalize(partial: partial, to: final)
            guard !replacing, let placed = identity(at: final) else { return .replaced }
            return .new(device: placed.device, inode: placed.inode)
        }
    }

    /// Syncs an unnamed partial's descriptor and links it at `final`; with something there
    /// already, names it as the partial and renames it over that, as any partial. Closes the
    /// descriptor. Blocks.
    static func place(_ fd: Int32, partial: URL, final: URL) throws -> Placement {
        defer { _ = closeDescriptor(fd) }
        if Durability.sync(fd) != 0 { throw error(errno, "fsync", partial) }
        #if os(Linux)
        try Durability.createFolder(final.deletingLastPathComponent())
        if linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, final.path, AT_SYMLINK_FOLLOW) == 0 {
            let dfd = open(final.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dfd >= 0 { _ = Durability.sync(dfd); _ = closeDescriptor(dfd) }
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw error(errno, "stat", final) }
            return .new(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        }
        guard errno == EEXIST else { throw error(errno, "name", final) }
        guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, partial.path, AT_SYMLINK_FOLLOW) == 0 else {
            if errno == EEXIST { return .nameTaken }
            throw error(errno, "name", partial)
        }
        #endif
        try finalize(partial: partial, to: final)
        return .replaced
    }
}
