import Foundation

/// The one way the package forces bytes to stable storage: `fsync` on Linux,
/// `F_FULLFSYNC` on Apple platforms (see `PlatformSync`). Where Courier promises
/// durability (a finished file, its directory entry, metadata written atomically), it
/// goes through here.
package enum Durability {
    /// Syncs a descriptor; 0 on success, else -1 with `errno` set.
    package static func sync(_ fd: Int32) -> Int32 {
        if let err = EngineExecutor.diskFault(.sync, fd: fd) { errno = err; return -1 }   // the simulator's disk
        return PlatformSync.fullSync(fd)
    }

    /// Syncs an open file handle.
    package static func sync(_ handle: FileHandle) throws {
        guard sync(handle.fileDescriptor) == 0 else {
            throw FileErrors.error(errno, "force to stable storage", URL(fileURLWithPath: "a file"), .write)
        }
    }

    /// Syncs a folder, so a rename inside it survives a power cut. A folder that cannot be
    /// synced at all is not an error, since nothing better can be done there and a download
    /// into it must not fail for it: a file system without folder syncs (`EINVAL`, `ENOTSUP`:
    /// some network and FUSE mounts) or a folder this process may write but not read
    /// (`EACCES`, `EPERM`: a drop box). A sync that fails (`EIO`) is an error, and so is a
    /// folder that cannot be opened for another reason.
    package static func syncFolder(_ folder: URL) throws {
        let dfd = Foundation.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else {
            let err = errno
            if err == EACCES || err == EPERM { return }
            throw FileErrors.error(err, "open the folder", folder, .write)
        }
        defer { Foundation.close(dfd) }
        guard sync(dfd) != 0 else { return }
        let err = errno
        if err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP { return }
        throw FileErrors.error(err, "sync the folder", folder, .write)
    }

    /// Creates `folder` and any missing parent, each made durable: a new folder's name is
    /// in its parent's entries, so every parent of one made here is synced, or a power cut
    /// takes the folder back with every file later synced into it (issue 29: a SYNCED
    /// attachment whose new `attachments` folder was gone after the cut). A folder already
    /// there costs one `stat`; anything else there (a file, a path it cannot reach) is
    /// `FileManager`'s error, as before.
    package static func createFolder(_ folder: URL) throws {
        var st = stat()
        if stat(folder.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { return }
        var missing: [URL] = []
        var probe = folder.standardizedFileURL
        while probe.path != "/", stat(probe.path, &st) != 0, errno == ENOENT {
            missing.append(probe)
            probe = probe.deletingLastPathComponent()
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for made in missing { try syncFolder(made.deletingLastPathComponent()) }
    }
}
