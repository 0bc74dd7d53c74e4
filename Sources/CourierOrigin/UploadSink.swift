import Foundation
import NIOCore

/// A PUT body streamed to a temporary file in the served directory.
final class UploadSink {
    let temp: URL
    let handle: FileHandle
    var done = false

    init(directory: URL) throws {
        temp = directory.appendingPathComponent(".upload-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil), let h = FileHandle(forWritingAtPath: temp.path) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)   // answered 500 by the origin
        }
        handle = h
    }

    func write(_ buffer: inout ByteBuffer) throws {
        try handle.write(contentsOf: Data(buffer.readableBytesView))
    }

    func commit(to target: URL) throws {
        try handle.close()
        done = true
        if rename(temp.path, target.path) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func discard() {
        if !done { try? handle.close(); unlink(temp.path); done = true }   // discarding: the temporary file is deleted next
    }
}
