#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
// Darwin only; type-checked on Linux by scripts/darwin-typecheck against Tests/DarwinStubs.
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
#endif
import Foundation

/// Forcing bytes to stable storage, Apple platforms: `fsync` there leaves them in the
/// drive's cache ("the drive itself may not physically write the data … for quite some
/// time", fsync(2)); `F_FULLFSYNC` asks the drive to flush too (fcntl(2)). File systems
/// that do not implement it fail the call: then `fsync` is the best there is.
enum PlatformSync {
    /// 0 on success, else -1 with `errno` set.
    static func fullSync(_ fd: Int32) -> Int32 {
        fcntl(fd, F_FULLFSYNC) == -1 ? fsync(fd) : 0
    }
}
#endif
