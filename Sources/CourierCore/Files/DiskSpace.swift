import Foundation

/// Free space on the filesystem that holds a path.
public enum DiskSpace {
    /// Bytes available to an unprivileged writer at `url` (the nearest existing ancestor is
    /// asked when `url` does not exist yet); `nil` when the system cannot tell.
    public static func available(at url: URL) -> Int64? {
        var probe = url
        var st = statvfs()
        while statvfs(probe.path, &st) != 0 {
            let parent = probe.deletingLastPathComponent()
            if parent.path == probe.path { return nil }
            probe = parent
        }
        return Int64(st.f_bavail) * Int64(st.f_frsize)
    }
}
