// `import Courier`: the engine (CourierCore) and the platform's HTTP stack, chosen by the
// manifest: URLSession (CourierURLSession) on Apple platforms, AsyncHTTPClient
// (CourierAsyncHTTPClient) elsewhere. An app on Apple platforms links no SwiftNIO.
@_exported import CourierCore
#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
@_exported import CourierURLSession
#else
@_exported import CourierAsyncHTTPClient
#endif

/// The platform's default `HTTPTransport`: `URLSessionTransport` on Apple platforms (the
/// system's proxies, App Transport Security, cellular and Low Data policies),
/// `AsyncHTTPClientTransport` elsewhere.
public enum PlatformTransport {
    /// A new transport of the platform's default kind, with its default settings.
    public static func make() -> any HTTPTransport {
        #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
        URLSessionTransport()
        #else
        AsyncHTTPClientTransport()
        #endif
    }
}

/// The system's own resumable upload, where the platform has one: `URLSessionResumableUploads`
/// on iOS 17, macOS 14, tvOS 17, visionOS 1 and later (URLSession speaks the IETF draft
/// "Resumable Uploads for HTTP" itself); `nil` before those and on other platforms, where
/// Courier speaks the draft over its transport.
public enum PlatformResumableUploads {
    /// A new system upload client, or `nil` where the system has none.
    public static func make() -> (any SystemResumableUploading)? {
        #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
        if #available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *) { return URLSessionResumableUploads() }
        #endif
        return nil
    }
}
