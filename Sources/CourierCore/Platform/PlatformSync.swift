#if !canImport(Darwin)
import Foundation

/// Forcing bytes to stable storage, Linux: `fsync` reaches the device (the Apple one is in
/// `PlatformSync+Darwin.swift`).
enum PlatformSync {
    /// 0 on success, else -1 with `errno` set.
    static func fullSync(_ fd: Int32) -> Int32 { fsync(fd) }
}
#endif
