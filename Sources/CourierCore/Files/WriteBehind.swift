import Foundation

/// Starts the kernel's write-back of a file range without waiting for it
/// (`sync_file_range(…, SYNC_FILE_RANGE_WRITE)`, looked up at run time: Swift's Glibc
/// module does not import it). A download that asks for this as it goes leaves little for
/// the final fsync, so syncing the finished file costs the disk's time once, overlapped
/// with the transfer, instead of after it. Where the symbol does not exist (Apple
/// platforms), nothing happens.
enum WriteBehind {
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    private static let function: SyncFileRange? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
    }()

    /// Asks the kernel to start writing `[offset, offset + length)` of `fd` to disk.
    static func start(fd: Int32, offset: Int64, length: Int64) {
        _ = function?(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */)
    }
}
