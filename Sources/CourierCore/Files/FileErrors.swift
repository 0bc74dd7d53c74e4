import Foundation

/// The one mapping from a system error number to a Courier code, for every file operation
/// of the package: the `E_FNF` codes for a missing file or folder only.
package enum FileErrors {
    /// What the failed call was doing.
    package enum Access: Sendable { case read, write }

    /// `err` (an `errno`) from `operation` on `url` while reading or writing.
    package static func error(_ err: Int32, _ operation: String, _ url: URL, _ access: Access) -> CourierError {
        let text = String(cString: strerror(err))
        let name = url.lastPathComponent
        let native = POSIXError(POSIXErrorCode(rawValue: err) ?? .EIO)
        let code = self.code(err, access)
        let what = code == .noSpace ? "no space left to" : "cannot"
        return CourierError(code, "\(what) \(operation) \(name): \(text)", underlying: native)
    }

    /// The code of an `errno` from a read or a write.
    static func code(_ err: Int32, _ access: Access) -> CourierError.Code {
        switch err {
        case ENOSPC, EDQUOT, EFBIG: return .noSpace
        case ENOENT, ENOTDIR: return access == .read ? .fileRead : .fileWrite
        case EACCES, EPERM, EROFS: return .permissionDenied
        default: return access == .read ? .readFailed : .writeFailed
        }
    }

    /// A Foundation error from `operation` on `url`: its POSIX code when it carries one,
    /// else a read or write failure keeping it as the underlying error.
    package static func error(_ error: any Error, _ operation: String, _ url: URL, _ access: Access) -> CourierError {
        if let courier = error as? CourierError { return courier }
        let ns = error as NSError
        let posix = (ns.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
            ?? (ns.domain == NSPOSIXErrorDomain ? Int32(ns.code) : nil)
        if let posix { return self.error(posix, operation, url, access) }
        if ns.domain == NSCocoaErrorDomain, let posix = cocoaAsPOSIX[ns.code] { return self.error(posix, operation, url, access) }
        return CourierError(access == .read ? .readFailed : .writeFailed, "cannot \(operation) \(url.lastPathComponent)", underlying: error)
    }

    /// Foundation's file error codes (NSFileNoSuchFileError …) that carry no POSIX error on
    /// Linux, as the POSIX error they stand for: a denied `mkdir` is a permission error with
    /// words, not `Error Domain=NSCocoaErrorDomain Code=513`.
    static let cocoaAsPOSIX: [Int: Int32] = [
        4: ENOENT, 260: ENOENT,        // NSFileNoSuchFileError, NSFileReadNoSuchFileError
        257: EACCES, 513: EACCES,      // NSFileReadNoPermissionError, NSFileWriteNoPermissionError
        640: ENOSPC,                   // NSFileWriteOutOfSpaceError
        642: EROFS,                    // NSFileWriteVolumeReadOnlyError
    ]

    /// The words of any error for a person: a Courier error as it is, a Foundation file error
    /// as its code, anything else by its localized description (never a raw `NSError` dump).
    package static func describe(_ error: any Error) -> String {
        if let courier = error as? CourierError { return courier.description }
        let ns = error as NSError
        if ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain {
            let posix = ns.domain == NSPOSIXErrorDomain ? Int32(ns.code) : cocoaAsPOSIX[ns.code]
            if let posix { return code(posix, .write).rawValue + ": " + String(cString: strerror(posix)) }
        }
        return ns.localizedDescription
    }
}
