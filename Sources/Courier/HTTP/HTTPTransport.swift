import NIOCore
import NIOHTTP1

/// One request the engine sends.
public struct TransportRequest: Sendable {
    /// An absolute http or https URL.
    public var url: String
    /// `GET` or `HEAD`.
    public var method: String
    /// Headers to send.
    public var headers: [(name: String, value: String)]

    /// Makes a request.
    public init(url: String, method: String = "GET", headers: [(name: String, value: String)] = []) {
        self.url = url
        self.method = method
        self.headers = headers
    }
}

/// A reply: status, headers and a streamed body.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The headers.
    public var headers: HTTPHeaders
    /// The body, streamed in buffers as they arrive.
    public var body: TransportBody

    /// Makes a reply.
    public init(status: Int, headers: HTTPHeaders, body: TransportBody) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A streamed response body.
public struct TransportBody: AsyncSequence, Sendable {
    /// A body buffer.
    public typealias Element = ByteBuffer
    private let make: @Sendable () -> AsyncIterator

    /// Wraps any sequence of buffers.
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == ByteBuffer {
        make = {
            var iterator = sequence.makeAsyncIterator()
            return AsyncIterator { try await iterator.next() }
        }
    }

    /// An iterator over the buffers.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextBuffer: () async throws -> ByteBuffer?
        /// The next buffer, or `nil` at the end of the body.
        public mutating func next() async throws -> ByteBuffer? { try await nextBuffer() }
    }

    /// Makes an iterator.
    public func makeAsyncIterator() -> AsyncIterator { make() }

    /// Reads and discards up to `limit` bytes, so the connection can be reused.
    public func drain(limit: Int = 64 << 10) async {
        var seen = 0
        var it = makeAsyncIterator()
        while seen < limit, let buffer = try? await it.next() { seen += buffer.readableBytes }   // draining a body nobody reads: a broken one just ends the drain
    }
}

/// The seam through which the engine speaks HTTP. Courier's implementation is
/// ``AsyncHTTPClientTransport``; tests and apps may pass their own.
///
/// A transport must not follow redirects (the engine does, to enforce its rules), must not
/// add `Accept-Encoding` of its own, and must report failures by throwing. A transport
/// that decompresses a content-coded body must leave `Content-Encoding` in the headers,
/// so the engine knows the reply cannot be resumed.
public protocol HTTPTransport: Sendable {
    /// Sends a request and returns once the reply's head has arrived.
    func send(_ request: TransportRequest) async throws -> TransportResponse
    /// Releases connections and threads.
    func shutdown() async throws
}
