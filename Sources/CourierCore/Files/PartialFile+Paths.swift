import Foundation

/// What is done to a partial file by its path: its length, preallocation, sync, the atomic
/// finish, and the errors of these calls as codes.
extension PartialFile {
    /// Creates (or reuses) the partial file at `url` with exactly `length` bytes reserved on
    /// disk, for a segmented download: a full disk is found now, not half way.
    public static func preallocate(_ url: URL, length: Int64) throws {
        try Durability.createFolder(url.deletingLastPathComponent())
        let fd = open(url.path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let err = errno
            if err == ELOOP { throw CourierError(.invalidPath, "the partial file \(url.lastPathComponent) is a symbolic link; refusing to follow it") }
            throw error(err, "open", url)
        }
        defer { _ = closeDescriptor(fd) }
        if let err = EngineExecutor.diskFault(.write) { throw error(err, "reserve space for", url) }   // the simulator's disk
        guard ftruncate(fd, off_t(length)) == 0 else { throw error(errno, "size", url) }
        #if canImport(Glibc)
        // The file system reserves the blocks, or says it cannot (FUSE, NFS before 4.2): then
        // the file stays sparse and a full disk shows on a write. Not posix_fallocate, whose
        // fallback writes a byte per block and needs read access (EBADF on this descriptor).
        if let fallocate = Self.fallocate, fallocate(fd, 0, 0, length) != 0 {
            let err = errno
            if err != EOPNOTSUPP, err != ENOSYS, err != EINVAL { throw error(err, "reserve space for", url) }
        }
        #endif
    }

    /// glibc's `fallocate`, looked up at run time: Swift's Glibc module declares it only
    /// under `_GNU_SOURCE`.
    private typealias Fallocate = @convention(c) (Int32, Int32, Int64, Int64) -> Int32
    private static let fallocate: Fallocate? = dlsym(dlopen(nil, RTLD_NOW), "fallocate64").map { unsafeBitCast($0, to: Fallocate.self) }

    /// Forces a file's bytes to stable storage. When that fails the file is deleted (it is
    /// not known to hold its bytes; see `syncOrDiscard`) and the error thrown.
    public static func sync(_ url: URL) throws {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw error(errno, "open", url) }
        defer { _ = closeDescriptor(fd) }
        try syncOrDiscard(fd, url)
    }

    /// Deletes the partial at `url`, if there is one, for good: its folder is synced after,
    /// so a power cut cannot bring the old name back beside a record that by then describes
    /// a newer file under it (a restart from zero), which a resume would go on from (the
    /// simulator's power cut: seed 41009388, a completed file of two attempts). Blocks.
    static func deleteDurably(_ url: URL) throws {
        try deleteDurably(url, ifStill: nil)
    }

    /// As ``deleteDurably(_:)``, only when `url` still names the file `identity` (when given).
    static func deleteDurably(_ url: URL, ifStill identity: (device: UInt64, inode: UInt64)?) throws {
        if let identity, Self.identity(at: url).map({ $0 != identity }) ?? true { return }
        guard unlink(url.path) == 0 else {
            if errno == ENOENT { return }
            throw error(errno, "delete", url)
        }
        try Durability.syncFolder(url.deletingLastPathComponent())
    }

    /// Forces `fd`'s bytes to stable storage; when that fails, the partial at `url` is deleted
    /// (if the path still names `fd`'s file) before the error is thrown. A failed sync leaves a
    /// file not known to hold its bytes: Linux marks the pages whose write-back failed clean,
    /// and a later read may give what the disk held before. A run that resumed from it would
    /// complete a wrong file (the simulator's failing disk: seed 30000169); the download
    /// starts again from nothing instead.
    static func syncOrDiscard(_ fd: Int32, _ url: URL) throws {
        guard Durability.sync(fd) != 0 else { return }
        let err = errno
        var st = stat()
        // For good, as every deletion of a partial (the simulator's power cut: seed 43041981,
        // a cancel that then found no name to delete and synced nothing).
        if fstat(fd, &st) == 0 { try? deleteDurably(url, ifStill: (UInt64(st.st_dev), UInt64(st.st_ino))) }   // the sync's error is the one thrown
        throw error(err, "fsync", url)
    }

    /// The length of the file on disk at `url` (0 when it does not exist).
    public static func length(at url: URL) -> Int64 {
        var st = stat()
        guard lstat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return 0 }
        return Int64(st.st_size)
    }

    /// The identity (device, inode) of the regular file at `url`, `nil` when there is none:
    /// tells whether a path still names the file this process put there.
    package static func identity(at url: URL) -> (device: UInt64, inode: UInt64)? {
        var st = stat()
        guard lstat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// Where a download's bytes gather until it is whole: beside its final path.
    public static func partialPath(of destination: String) -> String { destination + ".partial" }

    /// Moves a finished partial file to its final path atomically, creating the final
    /// directory, replacing an older file there, and syncing the directory entry.
    public static func finalize(partial: URL, to final: URL) throws {
        let dir = final.deletingLastPathComponent()
        do {
            try Durability.createFolder(dir)
        } catch {
            throw FileErrors.error(error, "create the folder of", final, .write)
        }
        var st = stat()
        let replacing = lstat(final.path, &st) == 0
        if replacing, (st.st_mode & S_IFMT) == S_IFDIR {
            throw CourierError(.writeFailed, "the final path \(final.lastPathComponent) is a directory")
        }
        guard rename(partial.path, final.path) == 0 else { throw error(errno, "rename", final) }
        do {
            try Durability.syncFolder(dir)
        } catch {
            // The rename may not survive a power cut, and no record may say done behind it
            // (the simulator's power cut: seed 40002245, a completed record and no file): the
            // download fails with the folder's error. Where nothing was, the file goes back
            // to its partial name, whole (a resume finds it so); over a file the user had,
            // which the rename has already replaced, the new one stays in place.
            if !replacing { _ = rename(final.path, partial.path) }   // failing, it stays in place: the record still says it is not done
            throw error
        }
    }

    /// Forces a handed-over descriptor's bytes to stable storage and closes it. Blocks.
    static func syncAndClose(_ fd: Int32, _ url: URL) throws {
        defer { _ = closeDescriptor(fd) }
        try syncOrDiscard(fd, url)
    }

    /// Forces the bytes of a closed partial to stable storage: one an earlier attempt or
    /// process wrote and may not have synced (killed after its body, before its fsync; the
    /// page cache keeps the bytes). Blocks.
    static func sync(at url: URL) throws {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw error(errno, "open (to sync)", url) }
        try syncAndClose(fd, url)
    }

    /// Maps an errno from writing a partial or final file (``FileErrors``).
    static func error(_ err: Int32, _ operation: String, _ url: URL) -> CourierError {
        FileErrors.error(err, operation, url, .write)
    }
}
