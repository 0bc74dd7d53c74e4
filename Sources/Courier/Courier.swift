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
