import AsyncHTTPClient
import CourierCore
import NIOConcurrencyHelpers

/// An `HTTPClient` that its owner shuts down, awaited, exactly once: every client the
/// package creates is one of these. Dropped without ``shutdown()``, it still releases the
/// client without blocking, instead of tripping AsyncHTTPClient's debug-build precondition.
package final class OwnedHTTPClient: Sendable {
    /// The client; valid until ``shutdown()``.
    package let client: HTTPClient
    private let isShutDown = NIOLockedValueBox(false)

    /// A client with `configuration`, except that a refused connection fails at once (the
    /// caller's retry policy decides what next) instead of being retried inside the client
    /// until the connect timeout, that an HTTP/2 connection that can no longer carry
    /// requests is retired (``HTTP2ConnectionGuard``), and that an HTTP/1.1 connection reads
    /// in large buffers (``ReceiveBuffers``).
    package init(configuration: HTTPClient.Configuration) {
        var configuration = AsyncHTTPClientTransport.guardingHTTP2Connections(configuration)
        configuration.http1_1ConnectionDebugInitializer = ReceiveBuffers.configure
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// A client for a service's API (attachments over HTTP, a media server): follows up to
    /// 5 redirects, unlike the engine's transport, which follows them itself.
    package static func forService() -> OwnedHTTPClient {
        OwnedHTTPClient(configuration: .init(redirectConfiguration: .follow(max: 5, allowCycles: false)))
    }

    /// A service's base URL, validated (http or https), without a trailing slash.
    package static func baseURL(_ text: String) throws -> String {
        _ = try URLPolicy.validate(text)
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// Shuts the client down and waits for it; later calls return at once. Errors leave as
    /// `CourierError`s.
    package func shutdown() async throws {
        guard isShutDown.withLockedValue({ let was = $0; $0 = true; return !was }) else { return }
        do { try await client.shutdown() } catch { throw AsyncHTTPClientTransport.map(error, url: "the HTTP client") }
    }

    deinit {
        if isShutDown.withLockedValue({ !$0 }) { client.shutdown(queue: .global()) { _ in } }
    }
}
