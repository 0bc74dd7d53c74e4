import AsyncHTTPClient
import Courier
import Foundation
import NIOCore

/// A byte range of a file as a streamed request body, read 1 MiB at a time.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL
    let offset: Int64
    let length: Int64

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        var remaining: Int64
        mutating func next() async throws -> ByteBuffer? {
            guard remaining > 0, let handle else { try? handle?.close(); return nil }
            guard let data = try handle.read(upToCount: Int(Swift.min(remaining, Int64(1 << 20)))), !data.isEmpty else {
                throw CourierError(.fileRead, "the file ended early while uploading")
            }
            remaining -= Int64(data.count)
            if remaining == 0 { try? handle.close() }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        let handle = FileHandle(forReadingAtPath: url.path)
        try? handle?.seek(toOffset: UInt64(offset))
        return AsyncIterator(handle: handle, remaining: handle == nil ? 0 : length)
    }

    var body: HTTPClientRequest.Body { .stream(self, length: .known(length)) }

    static func size(of url: URL) throws -> Int64 {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: url.path), let size = (attrs[.size] as? NSNumber)?.int64Value else {
            throw CourierError(.fileNotFound, "\(url.lastPathComponent) does not exist")
        }
        return size
    }
}

/// Shared HTTP plumbing for the adapters.
enum HTTPCalls {
    /// Reads a small reply body (error pages, XML) up to 1 MiB.
    static func text(_ response: HTTPClientResponse) async throws -> String {
        var buffer = try await response.body.collect(upTo: 1 << 20)
        return buffer.readString(length: buffer.readableBytes) ?? ""
    }

    /// Streams a GET reply body to a file atomically.
    static func save(_ response: HTTPClientResponse, to destination: URL) async throws {
        try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temp = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil), let out = FileHandle(forWritingAtPath: temp.path) else {
            throw CourierError(.fileWrite, "cannot create \(temp.lastPathComponent)")
        }
        do {
            for try await buffer in response.body { try out.write(contentsOf: Data(buffer.readableBytesView)) }
            try Durability.sync(out)
            try out.close()
            guard rename(temp.path, destination.path) == 0 else { throw CourierError(.fileWrite, "cannot move \(destination.lastPathComponent) into place") }
        } catch {
            try? out.close()
            unlink(temp.path)
            throw error
        }
    }

    static func failure(_ what: String, _ response: HTTPClientResponse, _ body: String) -> CourierError {
        let status = Int(response.status.code)
        let code: CourierError.Code = status == 404 ? .remoteNotFound : .remoteStorage
        return CourierError(code, "\(what) failed: \(status) \(response.status.reasonPhrase) \(body.prefix(300))", httpStatus: status)
    }
}
