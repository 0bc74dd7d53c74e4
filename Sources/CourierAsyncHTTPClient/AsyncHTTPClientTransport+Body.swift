import AsyncHTTPClient
import CourierCore
import Foundation
import NIOCore

extension AsyncHTTPClientTransport {
    /// A request body as AsyncHTTPClient sends it: bytes in 256 KiB slices, a file's range
    /// read 1 MiB at a time (never the whole range in memory), each slice announced to the
    /// observer before it goes (so a rate limit holds within a body).
    static func body(_ body: TransportRequestBody, observer: (any RequestBodyObserver)?) -> HTTPClientRequest.Body {
        switch body {
        case let .bytes(data):
            guard let observer else { return .bytes(data) }
            return .stream(BodySlices(source: .bytes(data), length: Int64(data.count), observer: observer), length: .known(Int64(data.count)))
        case let .file(url, offset, length):
            return .stream(BodySlices(source: .file(url, offset: offset), length: length, observer: observer), length: .known(length))
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

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: Source
        let handle: FileHandle?
        let observer: (any RequestBodyObserver)?
        var position: Int64 = 0
        let length: Int64

        mutating func next() async throws -> ByteBuffer? {
            guard position < length else { try? handle?.close(); return nil }   // a read-only handle: closing loses nothing
            let slice: Data
            switch source {
            case let .bytes(data):
                let end = Int(Swift.min(length, position + (256 << 10)))
                slice = data.subdata(in: data.startIndex + Int(position) ..< data.startIndex + end)
            case let .file(url, _):
                guard let handle else { throw CourierError(.fileRead, "\(url.lastPathComponent) could not be opened for the upload") }
                guard let data = try handle.read(upToCount: Int(Swift.min(length - position, 256 << 10))), !data.isEmpty else {
                    throw CourierError(.readFailed, "\(url.lastPathComponent) ended early while uploading: it changed under the upload")
                }
                slice = data
            }
            try await observer?.willSend(slice.count)
            position += Int64(slice.count)
            observer?.didSend(slice.count)
            return ByteBuffer(bytes: slice)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        var handle: FileHandle?
        if case let .file(url, offset) = source {
            handle = FileHandle(forReadingAtPath: url.path)
            try? handle?.seek(toOffset: UInt64(offset))   // a failed seek makes the next read fail, which is reported
        }
        return AsyncIterator(source: source, handle: handle, observer: observer, length: length)
    }
}
