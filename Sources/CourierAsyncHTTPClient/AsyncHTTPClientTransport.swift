import AsyncHTTPClient
import CourierCore
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOPosix
import NIOSSL

/// `HTTPTransport` over AsyncHTTPClient: connection pooling, HTTP/2 where a TLS server
/// offers it (ALPN; many requests as streams of one connection), TLS with certificate
/// verification, no redirect following, and bounded decompression for servers that
/// compress although asked not to.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient
    /// For requests that want a connection of their own (``TransportRequest/ownConnection``,
    /// a segmented download's ranges): HTTP/1.1 only, so each is a TCP connection.
    private let separateClient: HTTPClient
    /// The clients this transport made (and shuts down); empty for one it was given.
    private let owned: [OwnedHTTPClient]
    /// Origins whose connections may be pooled (``StaleConnection``).
    private let keepAlive = KeepAliveOrigins(idleTime: .seconds(30))

    /// How server certificates are checked.
    public enum TLSTrust: Sendable, Equatable {
        /// Against the system's roots (the default).
        case system
        /// Against the system's roots and the CA certificates in this PEM file.
        case additionalCA(pemFile: String)
        /// Not at all (`--insecure`): for tests and self-signed development servers only.
        case insecure
    }

    /// Makes a transport with its own client.
    /// - Parameters:
    ///   - connectTimeout: how long a connection may take to open.
    ///   - decompressionRatioLimit: the largest decoded/encoded ratio accepted from a server
    ///     that compresses anyway (a bound against decompression bombs).
    ///   - trust: how server certificates are checked (verified against the system by default).
    public init(connectTimeout: Duration = .seconds(15), decompressionRatioLimit: Int = 100, trust: TLSTrust = .system) {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch trust {
        case .system: break
        case let .additionalCA(pemFile): tls.additionalTrustRoots = [.file(pemFile)]
        case .insecure: tls.certificateVerification = .none
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(Self.nanoseconds(connectTimeout))),
            decompression: .enabled(limit: .ratio(decompressionRatioLimit))
        )
        // HTTP/2 where the server offers it, HTTP/1.1 otherwise. Over HTTP/2 one connection
        // per origin carries up to the server's limit of concurrent streams (its SETTINGS;
        // nginx: 128); over HTTP/1.1 at most 8 connections per origin, the rest wait.
        configuration.httpVersion = .automatic
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.connectionsPerOrigin)
        let shared = OwnedHTTPClient(configuration: configuration)
        configuration.httpVersion = .http1Only
        // A segmented download asks for up to 16 ranges at once.
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        let separate = OwnedHTTPClient(configuration: configuration)
        owned = [shared, separate]
        client = shared.client
        separateClient = separate.client
    }

    /// How many HTTP/1.1 connections one origin gets at most (AsyncHTTPClient's default).
    static let connectionsPerOrigin = 8

    /// `configuration` with Courier's guard of HTTP/2 connections installed (a connection
    /// SwiftNIO gave up on is closed; one whose pool lost streams is retired; RELIABILITY.md,
    /// "Over HTTP/2") and each stream's DATA frames joined per read (half the CPU for a large
    /// body; BENCHMARKS.md), for a client an app makes itself and passes to
    /// ``init(client:)``. It takes AsyncHTTPClient's two HTTP/2 debug initializers.
    public static func guardingHTTP2Connections(_ configuration: HTTPClient.Configuration) -> HTTPClient.Configuration {
        var configuration = configuration
        configuration.http2ConnectionDebugInitializer = HTTP2ConnectionGuard.install
        configuration.http2StreamChannelDebugInitializer = HTTP2ConnectionGuard.watchStream
        return configuration
    }

    /// Uses an existing client. It must be configured not to follow redirects; make its
    /// configuration with ``guardingHTTP2Connections(_:)`` for HTTP/2.
    public init(client: HTTPClient) {
        self.client = client
        self.separateClient = client
        self.owned = []
    }

    /// A duration in nanoseconds for SwiftNIO, saturating: an absurd timeout from a caller
    /// (`--connect-timeout 10000000000`) is "never", not an overflow; a negative one is none.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow || overflowAgain ? .max : sum
    }

    /// Sends the request; maps AsyncHTTPClient's errors to `CourierError`.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var req = HTTPClientRequest(url: request.url)
        req.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields where request.body == nil || field.name != .contentLength {
            req.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body = request.body { req.body = Self.body(body, observer: request.bodyObserver, loops: client.eventLoopGroup) }
        let deadline: NIODeadline = request.timeout.map { .now() + .nanoseconds(Self.nanoseconds($0)) } ?? .distantFuture
        let origin = KeepAliveOrigins.origin(of: request.url), keepAlive = self.keepAlive
        do {
            let response = try await Self.execute(req, on: request.ownConnection ? separateClient : client, deadline: deadline) { error in
                let gone = KeepAliveOrigins.closedConnection(error)
                // "Nothing sent" is trusted only without a body: SwiftNIO says "I/O on closed
                // channel" for any write after the close, a streamed body's too.
                return gone.closed && StaleConnection.mayResend(request.method, nothingSent: gone.nothingSent && request.body == nil,
                                                                reusedConnection: keepAlive.mayReuse(origin))
            }
            var fields = HTTPFields()
            for (name, value) in response.headers {
                // A name HTTP does not allow cannot be a header any rule reads: it is dropped.
                if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
            }
            try ReplyViolation.checkHeaderBlock(fields, url: request.url)
            // A reply that ends with its connection kept: the origin's connections may be pooled.
            let keeps = !response.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }
            let ended: @Sendable () -> Void
            if keeps { ended = { keepAlive.replyEnded(origin) } } else { ended = {} }
            return TransportResponse(status: Int(response.status.code), headerFields: fields, body: TransportBody(MappedBody(base: response.body, ended: ended)))
        } catch {
            throw Self.map(error, url: request.url)
        }
    }

    /// `client.execute`, sent again at once (up to 3 times in all) when the connection the
    /// pool gave the request was gone before its reply:
    /// - closed before the request went out: the pool can lease a stream of an HTTP/2
    ///   connection that is being retired (HTTP2ConnectionGuard), and AsyncHTTPClient then
    ///   fails the request as "cancelled" though nobody cancelled it. Nothing was sent, so
    ///   sending again is safe, whatever the method;
    /// - a keep-alive connection the server closed (`stale`: ``StaleConnection``'s rule).
    private static func execute(_ req: HTTPClientRequest, on client: HTTPClient, deadline: NIODeadline,
                                stale: (any Error) -> Bool) async throws -> HTTPClientResponse {
        var attempt = 1
        while true {
            do {
                return try await client.execute(req, deadline: deadline)
            } catch let error as HTTPClientError where error == .cancelled && !Task.isCancelled && attempt < 3 {
                attempt += 1
            } catch where !Task.isCancelled && attempt <= StaleConnection.resends && stale(error) {
                attempt += 1
            }
        }
    }

    /// Shuts the client down when this transport made it (a dropped transport still
    /// releases it, without waiting).
    public func shutdown() async throws {
        for client in owned { try await client.shutdown() }
    }

    /// Any error of AsyncHTTPClient, SwiftNIO or NIOSSL as a `CourierError` (or a
    /// `CancellationError`), for every module of the package that talks HTTP.
    package static func map(_ error: any Error, url: String) -> any Error {
        if error is CancellationError { return error }
        if let e = error as? CourierError { return e }
        if let e = error as? HTTPClientError, e == .cancelled {
            // A cancellation only when the caller's task was cancelled. AsyncHTTPClient also
            // cancels requests itself, on a connection it closes or retires under them; taken
            // for the caller's cancellation, such a download was put back in the queue as if
            // the downloader were shutting down, and waited there (seen once over HTTP/2: a
            // resumed download stuck in `queued`). It is a dropped connection: retried.
            if Task.isCancelled { return CancellationError() }
            return CourierError(.network, "the connection closed under the request (\(Redactor.redact(url)))", underlying: error)
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError || String(describing: error).contains("handshakeFailed") {
            // In words; BoringSSL's text (with source paths of the machine that built it) stays
            // the underlying error, logged with --verbose.
            return CourierError(.tls, "the TLS handshake with \(Redactor.redact(url)) failed: \(TLSFailure.words(String(describing: error)))", underlying: error)
        }
        if let e = error as? HTTPParserError, e != .invalidEOFState, e != .closedConnection {
            // The reply breaks HTTP/1.1 (a cut-off reply is not one: it passes).
            return ReplyViolation.error(ReplyViolation.words(e.debugDescription) ?? e.debugDescription, url: url, underlying: error)
        }
        if error is NIOHTTPDecompression.DecompressionError {
            return CourierError(.bodyTooLong, "the server's compressed body decodes past the allowed size", underlying: error)
        }
        if isConnectionRefused(error) {
            let target = URL(string: url).map { "\($0.host ?? "?"):\($0.port.map(String.init) ?? ($0.scheme == "https" ? "443" : "80"))" } ?? "the server"
            return CourierError(.connectionRefused, "connection refused by \(target) (nothing listens there)", underlying: error)
        }
        if let e = error as? HTTPClientError, e == .deadlineExceeded || e == .connectTimeout || e == .readTimeout {
            return CourierError(.timeout, "timed out talking to \(url)", underlying: error)
        }
        if let e = error as? HTTPClientError, e == .invalidURL || e == .emptyHost || e == .emptyScheme {
            return CourierError(.invalidURL, "invalid URL \(url)", underlying: error)
        }
        if let e = error as? HTTPClientError, e == .unsupportedScheme("") || String(describing: e).contains("unsupportedScheme") {
            return CourierError(.unsupportedScheme, "unsupported scheme in \(url)", underlying: error)
        }
        if error is NIOHTTP2Errors.StreamClosed {
            // A stream the server refused or reset, before or during its reply: above the last
            // one a GOAWAY let through (a server ending its connection after N requests), or
            // cancelled. The engine asks again (for the rest), on a new connection.
            return CourierError(.network, "the server closed the HTTP/2 stream (\(Redactor.redact(url)))", underlying: error)
        }
        if let e = error as? IOError, e.errnoCode == ECONNRESET || e.errnoCode == EPIPE {
            // In words; SwiftNIO's text names the system call that saw it.
            return CourierError(.network, "the server reset the connection (\(url))", underlying: error)
        }
        return CourierError(.network, "network error talking to \(url): \(Redactor.redact(String(describing: error)))", underlying: error)
    }
}

extension AsyncHTTPClientTransport {
    /// Whether the connection was refused (`ECONNREFUSED`), directly or on every address tried.
    static func isConnectionRefused(_ error: any Error) -> Bool {
        if let e = error as? NIOConnectionError {
            return !e.connectionErrors.isEmpty && e.connectionErrors.allSatisfy { isConnectionRefused($0.error) }
        }
        if let e = error as? IOError { return e.errnoCode == ECONNREFUSED }
        return false
    }
}

/// Maps body errors (connection dropped mid-body) to `CourierError`.
private struct MappedBody: AsyncSequence, Sendable {
    typealias Element = BodyChunk
    let base: HTTPClientResponse.Body
    /// Told when the body has ended whole.
    let ended: @Sendable () -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator
        let ended: @Sendable () -> Void
        mutating func next() async throws -> BodyChunk? {
            do {
                guard let buffer = try await base.next() else { ended(); return nil }
                return BodyChunk(NIOBytes(buffer: buffer))
            } catch {
                let mapped = AsyncHTTPClientTransport.map(error, url: "the server")
                if let c = mapped as? CourierError, c.code == .network {
                    throw CourierError(.network, "the connection dropped mid-body", underlying: error)
                }
                throw mapped
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), ended: ended) }
}

/// A NIO buffer read in place through the seam.
struct NIOBytes: TransportBytes {
    let buffer: ByteBuffer
    var count: Int { buffer.readableBytes }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeReadableBytes(body)
    }
}
