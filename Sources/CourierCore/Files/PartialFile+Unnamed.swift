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
    /// Whether ``init(unnamedAt:bufferSize:)`` can make a file with no name here (Linux, with
    /// `O_TMPFILE` and `linkat`): elsewhere it names the file at once.
    static var opensUnnamed: Bool {
        #if os(Linux)
        if canLink { return true }
        #endif
        return false   // (no #else: a Darwin-only line here would go un-type-checked, scripts/darwin-typecheck)
    }

    /// A new, empty partial for `url`, unnamed where the system allows it, else named as
    /// ``init(url:bufferSize:)`` makes it. A file already at `url` is deleted: a download
    /// from zero keeps none of it.
    convenience init(unnamedAt url: URL, bufferSize: Int) throws {
        #if os(Linux)
        try Durability.createFolder(url.deletingLastPathComponent())
        try Self.deleteDurably(url)   // an old file's name must not come back over this one's
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
    /// Whether this process can name an unnamed file (through `/proc/self/fd`): tried once,
    /// in the temporary folder, so a sandbox that refuses it keeps named partials instead of
    /// failing every small download.
    static let canLink: Bool = {
        let dir = NSTemporaryDirectory()
        let fd = open(dir, tmpFileFlag | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }   // cannot be tried: named partials, as before
        defer { _ = closeDescriptor(fd) }
        let name = (dir as NSString).appendingPathComponent("courier-link-probe-\(getpid())-\(UInt32.random(in: 0 ... .max))")
        guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0 else { return false }
        unlink(name)
        return true
    }()
    #endif
}

extension PartialFile {
    /// The identity (device, inode) of the open file; `nil` once handed over or closed.
    var openIdentity: (device: UInt64, inode: UInt64)? {
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0 else { return nil }
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// Deletes the name `url` when it still names the file `identity` (a name this run gave
    /// and must take back); true when it did.
    @discardableResult
    static func delete(_ url: URL, ifStill identity: (device: UInt64, inode: UInt64)) -> Bool {
        guard let now = Self.identity(at: url), now == identity else { return false }
        return unlink(url.path) == 0
    }

    /// Takes back the name ``materialize()`` gave, when the path still names this file: the
    /// download turned out not to be this run's any more, and a name left behind would
    /// outlive it (or stand in the way of the run it is now). The bytes stay with the
    /// descriptor and go when it closes.
    func unname() {
        #if os(Linux)
        if let mine = openIdentity, Self.delete(url, ifStill: mine) { isUnnamed = true }
        #endif
    }
}

extension PartialFile {
    /// Syncs an unnamed partial's descriptor and links it at `final`, then syncs the folder:
    /// the order a rename has. Returns the identity of the file now at `final`; `nil` when
    /// something is there already (nothing linked). The descriptor stays open. Blocks.
    static func link(_ fd: Int32, partial: URL, final: URL) throws -> (device: UInt64, inode: UInt64)? {
        if Durability.sync(fd) != 0 { throw error(errno, "fsync", partial) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw error(errno, "stat", partial) }
        #if os(Linux)
        try Durability.createFolder(final.deletingLastPathComponent())
        guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, final.path, AT_SYMLINK_FOLLOW) == 0 else {
            if errno == EEXIST { return nil }
            throw error(errno, "name", final)
        }
        do {
            try Durability.syncFolder(final.deletingLastPathComponent())
        } catch {
            // The name may not survive a power cut: taken back, and the error thrown, as for a
            // rename where nothing was (`finalize`); the bytes go with the descriptor.
            _ = delete(final, ifStill: (UInt64(st.st_dev), UInt64(st.st_ino)))
            throw error
        }
        #endif
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }
}
