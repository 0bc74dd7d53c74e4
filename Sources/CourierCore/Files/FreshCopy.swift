import Foundation

/// Gives a file a new inode with the same bytes: copied to a file beside it, synced, and
/// renamed over it. A descriptor another process still holds on the old file keeps pointing
/// there, so what it writes later never reaches the file at this path (a run that takes a
/// partial over from an owner that may still be alive: ``DownloadRun/takeOverPartial(_:from:)``).
enum FreshCopy {
    /// Replaces the file at `url` by a copy of itself, made durable (the copy synced, then
    /// the folder after the rename). False when there is no file there. A copy a kill cut
    /// short is found by its name the next time and replaced.
    @discardableResult
    static func replace(_ url: URL) throws -> Bool {
        let source = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard source >= 0 else {
            if errno == ENOENT { return false }
            throw FileErrors.error(errno, "open", url, .read)
        }
        defer { close(source) }
        var info = stat()
        guard fstat(source, &info) == 0 else { throw FileErrors.error(errno, "read", url, .read) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw CourierError(.invalidPath, "\(url.lastPathComponent) is not a regular file") }
        let size = Int64(info.st_size)
        let fresh = temporaryName(for: url)
        unlink(fresh.path)   // a copy a kill cut short; none is the usual case
        let write = try AtomicWrite(replacing: url, through: fresh)
        do {
            var position: Int64 = 0
            // In the kernel where it can (a clone on file systems that share blocks), else
            // through a buffer from where it stopped.
            try KernelCopy.copyRest(from: source, to: write.handle.fileDescriptor, at: &position, source: url, target: fresh)
            // All of it (the old writer may have added some meanwhile): a short copy would cut
            // bytes the record claims.
            guard position >= size else { throw CourierError(.writeFailed, "the copy of \(url.lastPathComponent) stopped at \(position) of \(size) bytes") }
            try write.commit()
        } catch {
            write.abandon()
            throw error
        }
        return true
    }

    /// The copy's name beside `url`: short and fixed for a given file (a name near the
    /// system's limit stays within it; a copy a kill cut short is found again).
    static func temporaryName(for url: URL) -> URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325   // FNV-1a of the file's name
        for byte in url.lastPathComponent.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return url.deletingLastPathComponent().appendingPathComponent(".courier-copy-" + String(hash, radix: 16))
    }
}
