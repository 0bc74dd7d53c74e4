import Foundation

/// A file written whole or not at all: bytes go to a temporary sibling, which is synced,
/// closed and renamed over the target; then the folder is synced, so the new name survives
/// a power cut. Until ``commit()``, the target is untouched; ``abandon()`` (on any error)
/// deletes the temporary file. Every atomic write of the package goes through here.
///
/// ```swift
/// let write = try AtomicWrite(replacing: target)
/// do { try write.handle.write(contentsOf: data); try write.commit() } catch { write.abandon(); throw error }
/// ```
package final class AtomicWrite {
    /// Where the bytes go until the commit.
    package let handle: FileHandle
    /// The temporary file.
    package let temporary: URL
    /// The file that the commit replaces.
    package let target: URL
    private var open = true
    private var placed = false

    /// Creates the temporary sibling of `target` (its folder must exist).
    package convenience init(replacing target: URL) throws {
        try self.init(replacing: target, through: target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString.prefix(8)).tmp"))
    }

    /// The same through a temporary file of a name the caller chose (a fixed one, so a copy a
    /// kill cut short is found again: ``FreshCopy``); none may be there.
    package init(replacing target: URL, through temporary: URL) throws {
        self.target = target
        self.temporary = temporary
        let fd = Foundation.open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileErrors.error(errno, "create a file beside", target, .write) }
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// `data`, written to `target` whole or not at all.
    package static func write(_ data: Data, to target: URL) throws {
        let write = try AtomicWrite(replacing: target)
        do {
            try write.handle.write(contentsOf: data)
            try write.commit()
        } catch {
            write.abandon()
            throw FileErrors.error(error, "write", target, .write)
        }
    }

    /// Syncs and closes the temporary file, renames it over the target and syncs the folder.
    package func commit() throws {
        try prepare()
        try putInPlace()
    }

    /// The first half of ``commit()``: the temporary file synced and closed.
    package func prepare() throws {
        guard Durability.sync(handle.fileDescriptor) == 0 else { throw FileErrors.error(errno, "force to stable storage", target, .write) }
        try close()
    }

    /// The second half of ``commit()`` (for a caller that renames under a lock): the
    /// rename over the target, and the folder synced.
    package func putInPlace() throws {
        guard rename(temporary.path, target.path) == 0 else { throw FileErrors.error(errno, "put in place", target, .write) }
        placed = true
        try Durability.syncFolder(target.deletingLastPathComponent())
    }

    /// Deletes the temporary file; the target stays as it was. After the rename (the
    /// folder's sync failed) the temporary name is no longer this write's: nothing is deleted.
    package func abandon() {
        if open {
            open = false
            try? handle.close()   // abandoning: the file is deleted next, its bytes do not matter
        }
        if !placed { unlink(temporary.path) }
    }

    private func close() throws {
        guard open else { return }
        open = false
        do { try handle.close() } catch { throw FileErrors.error(error, "close", temporary, .write) }
    }
}
