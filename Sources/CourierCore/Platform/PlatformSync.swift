#if !canImport(Darwin)
import Foundation

/// Forcing bytes to stable storage, Linux: `fsync` reaches the device (the Apple one is in
/// `PlatformSync+Darwin.swift`).
enum PlatformSync {
    /// 0 on success, else -1 with `errno` set. An interrupted call is made again (a failed
    /// sync costs the partial: `PartialFile.syncOrDiscard`).
    static func fullSync(_ fd: Int32) -> Int32 {
        while fsync(fd) != 0 { if errno != EINTR { return -1 } }
        return 0
    }
}
#endif
