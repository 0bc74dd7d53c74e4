import Foundation
import HTTPTypes

/// One request Courier sends: a download's GET, an upload's PUT or PATCH, an S3 or media
/// server call.
public struct TransportRequest: Sendable {
    /// An absolute http or https URL.
    public var url: String
    /// Wants a connection of its own, never a stream shared with other requests: one range
    /// of a segmented download, whose point is several connections (a server or a path that
    /// limits each connection). A transport that speaks HTTP/2 sends it over HTTP/1.1
    /// where it can choose (AsyncHTTPClient); URLSession decides for itself.
    public var ownConnection = false
    /// The method (`GET`, `HEAD`, `PUT`, `POST`, `PATCH`, `DELETE`).
    public var method: HTTPRequest.Method
    /// Headers to send.
    public var headerFields: HTTPFields
    /// What to send, streamed: never a whole file in memory.
    public var body: TransportRequestBody?
    /// How long the exchange may take up to the reply's head (`nil`: the transport's own
    /// limits; the engine watches body bytes itself). URLSession applies it as an idle
    /// timeout (no byte for that long), AsyncHTTPClient as a deadline for the head.
    public var timeout: Duration?
    /// Hears of the body's bytes as they go (upload progress, a rate limit).
    public var bodyObserver: (any RequestBodyObserver)?

    /// Makes a request.
    public init(url: String, method: HTTPRequest.Method = .get, headerFields: HTTPFields = [:],
                body: TransportRequestBody? = nil, timeout: Duration? = nil) {
        self.url = url
        self.method = method
        self.headerFields = headerFields
        self.body = body
        self.timeout = timeout
    }

    /// Makes a request from name/value pairs; a name that is not an HTTP token is refused
    /// with `E_INVALID_ARGUMENT` (never sent altered).
    public init(url: String, method: HTTPRequest.Method = .get, headers: [(name: String, value: String)],
                body: TransportRequestBody? = nil, timeout: Duration? = nil) throws {
        self.init(url: url, method: method, headerFields: try HTTPFields(validating: headers), body: body, timeout: timeout)
    }
}

/// A request body: bytes in memory (small calls), or a byte range of a file, which the
/// transport streams in bounded buffers.
public enum TransportRequestBody: Sendable {
    /// These bytes.
    case bytes(Data)
    /// `length` bytes of the file at `url`, from `offset`.
    case file(URL, offset: Int64, length: Int64)

    /// How many bytes it sends.
    public var length: Int64 {
        switch self {
        case let .bytes(data): Int64(data.count)
        case let .file(_, _, length): length
        }
    }
}

/// Hears of a request body's bytes as the transport hands them to the network.
public protocol RequestBodyObserver: Sendable {
    /// Before `count` more bytes go: may wait (a rate limit). A transport that cannot pace
    /// within a body (URLSession) calls it once with the whole body before sending it.
    func willSend(_ count: Int) async throws
    /// `count` more bytes went to the network.
    func didSend(_ count: Int)
}

/// A reply: status, headers and a streamed body.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The headers.
    public var headerFields: HTTPFields
    /// The body, streamed in chunks as they arrive.
    public var body: TransportBody

    /// Makes a reply.
    public init(status: Int, headerFields: HTTPFields, body: TransportBody) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }
}

/// The seam through which Courier speaks HTTP: every request it makes (downloads, uploads,
/// S3 and tus calls, the media server's API, the documents mirror) goes through one.
/// `URLSessionTransport` is the default on Apple platforms, `AsyncHTTPClientTransport`
/// (product `CourierAsyncHTTPClient`) on Linux; tests and apps may pass their own.
///
/// A transport must not follow redirects (Courier does, to enforce its rules), must not add
/// `Accept-Encoding` of its own, must stream a request body without holding it whole (its
/// `Content-Length` is the body's: a caller's own is not sent twice), and
/// must report failures by throwing (as ``CourierError`` where it can). A transport that
/// decompresses a content-coded body must leave `Content-Encoding` in the headers, so the
/// engine knows the reply cannot be resumed.
public protocol HTTPTransport: Sendable {
    /// Sends a request and returns once the reply's head has arrived.
    func send(_ request: TransportRequest) async throws -> TransportResponse
    /// Releases connections and threads.
    func shutdown() async throws
    /// Whether the transport holds a body back slice by slice under its observer's
    /// `willSend` (AsyncHTTPClient), or paces a whole body before sending it (URLSession): a
    /// signed request (S3) is then paced before it is signed, so it is never sent stale.
    var pacesWithinBodies: Bool { get }
}

extension HTTPTransport {
    /// Most transports stream a body slice by slice.
    public var pacesWithinBodies: Bool { true }
}

/// An observer whose pacing already happened (before a request was signed): only the
/// bytes going out are told.
package struct AlreadyPaced: RequestBodyObserver {
    package let base: any RequestBodyObserver
    package init(_ base: any RequestBodyObserver) { self.base = base }
    package func willSend(_ count: Int) async throws {}
    package func didSend(_ count: Int) { base.didSend(count) }
}
