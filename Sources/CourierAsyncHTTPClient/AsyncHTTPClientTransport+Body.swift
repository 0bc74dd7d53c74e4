import AsyncHTTPClient
import CourierCore
import Foundation
import NIOCore

extension AsyncHTTPClientTransport {
    /// A request body as AsyncHTTPClient sends it: bytes in 256 KiB slices, a file's range
    /// read 256 KiB at a time (never the whole range in memory), each slice announced to the
    /// observer before it goes (so a rate limit holds within a body).
    static func body(_ body: TransportRequestBody, observer: (any RequestBodyObserver)?, loops: any EventLoopGroup) -> HTTPClientRequest.Body {
        switch body {
        case let .bytes(data):
            guard let observer else { return .bytes(data) }
            return .stream(BodySlices(source: .bytes(data), length: Int64(data.count), observer: observer, loops: loops), length: .known(Int64(data.count)))
        case let .file(url, offset, length):
            return .stream(BodySlices(source: .file(url, offset: offset), length: length, observer: observer, loops: loops), length: .known(length))
        }
    }
}

/// A request body read a slice at a time: bytes in memory, or a byte range of a file.
struct BodySlices: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    enum Source: Sendable { case bytes(Data), file(URL, offset: Int64) }
    let source: Source
    let length: Int64
    let observer: (any RequestBodyObserver)?
    /// The client's event loops (see ``AsyncIterator/next()``).
    let loops: any EventLoopGroup

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: Source
        let loops: any EventLoopGroup
        let handle: FileHandle?
        let observer: (any RequestBodyObserver)?
        var position: Int64 = 0
        let length: Int64

        mutating func next() async throws -> ByteBuffer? {
            guard position < length else { try? handle?.close(); return nil }   // a read-only handle: closing loses nothing
            // AsyncHTTPClient pauses a body only when its channel stops being writable. Where
            // the kernel takes bytes as fast as they come (loopback, a fast link to a slow
            // server), it never does, and this iterator, off the event loop, can queue a whole
            // part in the loop's tasks before one of them runs. Every few slices it waits
            // until each loop has run what was queued before (their queues are first in,
            // first out): at most that many slices per body wait to be written.
            if position > 0, position % Int64(BodySlices.slice * BodySlices.queued) == 0 {
                for loop in loops.makeIterator() { try await loop.submit {}.get() }
            }
            var slice: ByteBuffer
            switch source {
            case let .bytes(data):
                let end = Int(Swift.min(length, position + Int64(BodySlices.slice)))
                slice = ByteBuffer(bytes: data[data.startIndex + Int(position) ..< data.startIndex + end])
            case let .file(url, offset):
                guard let handle else { throw CourierError(.fileRead, "\(url.lastPathComponent) could not be opened for the upload") }
                slice = try BodySlices.read(handle, at: offset + position, count: Int(Swift.min(length - position, Int64(BodySlices.slice))), url)
            }
            try await observer?.willSend(slice.readableBytes)
            position += Int64(slice.readableBytes)
            observer?.didSend(slice.readableBytes)
            return slice
        }
    }

    /// How much goes at a time.
    static let slice = 256 << 10
    /// How many slices may wait in the event loop's queue (see ``AsyncIterator/next()``).
    static let queued = 4

    /// `count` bytes of the file from `offset`, read straight into the buffer that goes to
    /// the socket (no `Data` in between: one copy less, one allocation less per slice).
    static func read(_ handle: FileHandle, at offset: Int64, count: Int, _ url: URL) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        while buffer.readableBytes < count {
            let want = count - buffer.readableBytes, at = off_t(offset + Int64(buffer.readableBytes))
            var got = 0, failure: Int32 = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { space in
                got = pread(handle.fileDescriptor, space.baseAddress, want, at)
                if got < 0 { failure = errno }
                return Swift.max(got, 0)   // a failure writes nothing; it is reported below
            }
            if got < 0, failure == EINTR { continue }
            guard got >= 0 else { throw CourierError(.readFailed, "cannot read \(url.lastPathComponent) for the upload: \(String(cString: strerror(failure)))") }
            guard got > 0 else { throw CourierError(.readFailed, "\(url.lastPathComponent) ended early while uploading: it changed under the upload") }
        }
        return buffer
    }

    func makeAsyncIterator() -> AsyncIterator {
        var handle: FileHandle?
        if case let .file(url, _) = source { handle = FileHandle(forReadingAtPath: url.path) }   // read with pread: no seek
        return AsyncIterator(source: source, loops: loops, handle: handle, observer: observer, length: length)
    }
}
