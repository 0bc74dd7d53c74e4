import Foundation

/// Copies a file's bytes into another inside the kernel (`copy_file_range`): no pass through
/// this process's memory, and on file systems that share blocks (Btrfs, XFS with reflink,
/// NFS 4.2 server-side copy) no copy at all. Adoption of a background task's file uses it to
/// join the remainder to the partial, and a take-over to give a partial a file of its own
/// (``FreshCopy``).
enum KernelCopy {
    /// glibc's `copy_file_range` (2.27 and later), looked up at run time: Swift's Glibc module
    /// declares it only under `_GNU_SOURCE`. Darwin has none (the lookup finds nothing).
    private typealias CopyFileRange = @convention(c) (Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32) -> Int
    private static let copyFileRange: CopyFileRange? = dlsym(dlopen(nil, RTLD_NOW), "copy_file_range")
        .map { unsafeBitCast($0, to: CopyFileRange.self) }

    /// Copies from `source`'s current offset to its end into `target` at `position`,
    /// advancing both. False when the kernel cannot do it for these two files (another file
    /// system, no such call, Darwin): the caller goes on with a buffer from where this left
    /// off (both offsets say where).
    static func copyAll(from source: Int32, to target: Int32, at position: inout Int64, source sourceURL: URL, target targetURL: URL) throws -> Bool {
        guard let copyFileRange = Self.copyFileRange else { return false }
        while true {
            var offset = position
            let count = copyFileRange(source, nil, target, &offset, 1 << 30, 0)
            if count > 0 { position = Int64(offset); continue }
            if count == 0 { return true }
            switch errno {
            case EINTR: continue
            case EXDEV, ENOSYS, EINVAL, EOPNOTSUPP, EBADF, ETXTBSY, EPERM: return false
            case EIO: throw FileErrors.error(errno, "read", sourceURL, .read)
            default: throw FileErrors.error(errno, "write", targetURL, .write)
            }
        }
    }

    /// Copies from `source`'s current offset to its end into `target` at `position`,
    /// advancing it: in the kernel where it can, through a buffer from where that stopped
    /// where it cannot (another file system, Darwin).
    static func copyRest(from source: Int32, to target: Int32, at position: inout Int64, source sourceURL: URL, target targetURL: URL) throws {
        if try copyAll(from: source, to: target, at: &position, source: sourceURL, target: targetURL) { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue }; throw FileErrors.error(errno, "read", sourceURL, .read) }
            if count == 0 { return }
            var written = 0
            while written < count {
                let n = buffer.withUnsafeBytes { pwrite(target, $0.baseAddress! + written, count - written, off_t(position)) }
                if n < 0 { if errno == EINTR { continue }; throw FileErrors.error(errno, "write", targetURL, .write) }
                written += n
                position += Int64(n)
            }
        }
    }
}
