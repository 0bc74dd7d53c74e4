import CourierCore
import Foundation

/// The system's own resumable upload on this platform: `URLSessionResumableUploads` on
/// iOS 17, macOS 14, tvOS 17, visionOS 1, watchOS 10 and later; `nil` before those and
/// where URLSession has none (FoundationNetworking).
public enum SystemResumableUploads {
    /// A new client of the system's resumable upload, or `nil` where there is none.
    public static func make() -> (any SystemResumableUploading)? {
        #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
        if #available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *) { return URLSessionResumableUploads() }
        #endif
        return nil
    }
}
