import Foundation

/// Free space on the filesystem that holds a path.
public enum DiskSpace {
    /// Bytes available to an unprivileged writer at `url` (the nearest existing ancestor is
    /// asked when `url` does not exist yet); `nil` when the system cannot tell.
    public static func available(at url: URL) -> Int64? {
        volume(at: url).map { Int64($0.stats.f_bavail) * Int64($0.stats.f_frsize) }
    }

    /// Whether `bytes` more may be written at `url`: a read-only file system is
    /// ``CourierError/Code/permissionDenied`` (no space would ever help it), and too little
    /// room is ``CourierError/Code/noSpace``. The room kept free beside the file scales with
    /// it: `reserve` for a large file, the file's own size (at least 1 MiB) for a small one,
    /// so a 6-byte file is not refused for want of 100 MiB.
    static func check(toWrite bytes: Int64, at url: URL, reserve: Int64) throws {
        guard let (stats, folder) = volume(at: url) else { return }   // the system cannot tell: the write will
        if UInt(stats.f_flag) & UInt(ST_RDONLY) != 0 {
            throw CourierError(.permissionDenied, "\(folder.path) is on a read-only file system: nothing can be written there")
        }
        let available = EngineExecutor.diskFault(.write) == ENOSPC ? 0 : Int64(stats.f_bavail) * Int64(stats.f_frsize)   // the simulator's disk: full
        let kept = min(reserve, max(bytes, 1 << 20))
        if available < bytes + kept {
            throw CourierError(.noSpace, "not enough free space: \(bytes) bytes to come plus \(kept) kept free, \(available) available")
        }
    }

    /// The file system statistics of the nearest existing folder holding `url`.
    private static func volume(at url: URL) -> (stats: statvfs, folder: URL)? {
        var probe = url
        var st = statvfs()
        while statvfs(probe.path, &st) != 0 {
            let parent = probe.deletingLastPathComponent()
            if parent.path == probe.path { return nil }
            probe = parent
        }
        return (st, probe)
    }
}
