#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
// Darwin only; type-checked on Linux by scripts/darwin-typecheck against Tests/DarwinStubs.
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
#endif
import Foundation

/// Forcing bytes to stable storage, Apple platforms: `fsync` there leaves them in the
/// drive's cache ("the drive itself may not physically write the data … for quite some
/// time", fsync(2)); `F_FULLFSYNC` asks the drive to flush too (fcntl(2)). Only a file
/// system that does not implement it (ENOTSUP, ENOTTY, EINVAL) falls back to `fsync`; a
/// real I/O error is reported, never hidden behind a successful `fsync`.
enum PlatformSync {
    /// 0 on success, else -1 with `errno` set.
    static func fullSync(_ fd: Int32) -> Int32 {
        while true {
            if fcntl(fd, F_FULLFSYNC) != -1 { return 0 }
            if errno == EINTR { continue }
            guard errno == ENOTSUP || errno == ENOTTY || errno == EINVAL else { return -1 }
            while true {
                if fsync(fd) == 0 { return 0 }
                if errno != EINTR { return -1 }
            }
        }
    }
}
#endif
