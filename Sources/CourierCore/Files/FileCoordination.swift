import Foundation

/// Advisory coordination between processes reading and writing one file, with `flock` on a
/// lock file beside it (a mirrored document's, a media library's metadata): readers share, a
/// writer is alone. Waiting polls without blocking a thread, so many waiters cannot starve
/// Swift's cooperative pool.
package enum FileCoordination {
    package enum Mode { case shared, exclusive }

    /// Runs `body` holding `lock`, the lock file of the file at `url`.
    package static func withLock<T>(_ lock: URL, of url: URL, _ mode: Mode, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        let fd = open(lock.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw FileErrors.error(errno, "coordinate access to", url, mode == .shared ? .read : .write)
        }
        defer { close(fd) }
        let op = (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB
        while flock(fd, op) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw FileErrors.error(errno, "lock", url, mode == .shared ? .read : .write)
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        defer { flock(fd, LOCK_UN) }
        return try await body()
    }
}
