import Foundation

/// Bytes a transport hands over in the storage it received them in (a `Data` from
/// URLSession, a NIO buffer from AsyncHTTPClient): read in place, never copied to cross
/// the seam.
public protocol TransportBytes: Sendable {
    /// How many bytes.
    var count: Int { get }
    /// Calls `body` with the bytes.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Data: TransportBytes {}
extension Array: TransportBytes where Element == UInt8 {}

/// One chunk of a reply's body.
public struct BodyChunk: Sendable {
    /// The bytes, as the transport received them.
    public let bytes: any TransportBytes

    /// Wraps bytes without copying them.
    public init(_ bytes: some TransportBytes) { self.bytes = bytes }

    /// How many bytes.
    public var count: Int { bytes.count }

    /// Calls `body` with the bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
}

/// A streamed response body.
public struct TransportBody: AsyncSequence, Sendable {
    /// A body chunk.
    public typealias Element = BodyChunk
    private let make: @Sendable () -> AsyncIterator

    /// Wraps any sequence of chunks.
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == BodyChunk {
        make = {
            var iterator = sequence.makeAsyncIterator()
            return AsyncIterator { try await iterator.next() }
        }
    }

    /// A body of these bytes (tests, and transports that have the body whole).
    public init(bytes: Data) {
        self.init(AsyncThrowingStream<BodyChunk, any Error> { continuation in
            if !bytes.isEmpty { continuation.yield(BodyChunk(bytes)) }
            continuation.finish()
        })
    }

    /// An iterator over the chunks.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextChunk: () async throws -> BodyChunk?
        /// The next chunk, or `nil` at the end of the body.
        public mutating func next() async throws -> BodyChunk? { try await nextChunk() }
    }

    /// Makes an iterator.
    public func makeAsyncIterator() -> AsyncIterator { make() }

    /// Reads and discards up to `limit` bytes, so the connection can be reused.
    public func drain(limit: Int = 64 << 10) async {
        var seen = 0
        var it = makeAsyncIterator()
        while seen < limit, let chunk = try? await it.next() { seen += chunk.count }   // draining a body nobody reads: a broken one just ends the drain
    }

    /// The whole body, refused with `E_BODY_TOO_LONG` past `limit` bytes (API replies,
    /// error pages: never a file).
    public func collect(upTo limit: Int) async throws -> Data {
        var data = Data()
        for try await chunk in self {
            guard data.count + chunk.count <= limit else {
                throw CourierError(.bodyTooLong, "the reply's body runs past \(limit) bytes")
            }
            chunk.withUnsafeBytes { data.append(contentsOf: $0) }
        }
        return data
    }
}
