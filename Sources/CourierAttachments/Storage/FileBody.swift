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
            guard remaining > 0, let handle else { try? handle?.close(); return nil }   // a read-only handle, or one already flushed: closing loses nothing
            guard let data = try handle.read(upToCount: Int(Swift.min(remaining, Int64(1 << 20)))), !data.isEmpty else {
                throw CourierError(.readFailed, "the file ended early while uploading: it changed under the upload")
            }
            remaining -= Int64(data.count)
            if remaining == 0 { try? handle.close() }   // a read-only handle, or one already flushed: closing loses nothing
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        let handle = FileHandle(forReadingAtPath: url.path)
        try? handle?.seek(toOffset: UInt64(offset))   // a failed seek makes the next read fail, which is reported
        return AsyncIterator(handle: handle, remaining: handle == nil ? 0 : length)
    }

    var body: HTTPClientRequest.Body { .stream(self, length: .known(length)) }

    static func size(of url: URL) throws -> Int64 {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: url.path), let size = (attrs[.size] as? NSNumber)?.int64Value else {   // the else branch reports the file as missing
            throw CourierError(.fileNotFound, "\(url.lastPathComponent) does not exist")
        }
        return size
    }
}

/// Shared HTTP plumbing for the adapters.
enum HTTPCalls {
    /// Sends a request; AsyncHTTPClient's errors leave as ``CourierError``s.
    static func execute(_ client: HTTPClient, _ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        do { return try await client.execute(request, timeout: timeout) } catch { throw AsyncHTTPClientTransport.map(error, url: request.url) }
    }

    /// Reads a small reply body (error pages, XML) up to 1 MiB.
    static func text(_ response: HTTPClientResponse) async throws -> String {
        do {
            var buffer = try await response.body.collect(upTo: 1 << 20)
            return buffer.readString(length: buffer.readableBytes) ?? ""
        } catch {
            throw AsyncHTTPClientTransport.map(error, url: "the reply body")
        }
    }

    /// Streams a GET reply body to a file atomically.
    static func save(_ response: HTTPClientResponse, to destination: URL) async throws {
        try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let write = try AtomicWrite(replacing: destination)
        do {
            for try await buffer in response.body {
                do { try write.handle.write(contentsOf: Data(buffer.readableBytesView)) } catch { throw FileErrors.error(error, "save", destination, .write) }
            }
            try write.commit()
        } catch {
            write.abandon()
            // What is not a file error came from the connection.
            throw AsyncHTTPClientTransport.map(error, url: destination.lastPathComponent)
        }
    }

    static func failure(_ what: String, _ response: HTTPClientResponse, _ body: String) -> CourierError {
        let status = Int(response.status.code)
        // A server's trouble (5xx, 408, 429) passes, as the engine's replies do: retried with
        // backoff. Anything else is the storage's answer and stands.
        let code: CourierError.Code = status == 404 ? .remoteNotFound : status == 408 ? .timeout
            : (status >= 500 || status == 429) ? .httpServerError : .remoteStorage
        return CourierError(code, "\(what) failed: \(status) \(response.status.reasonPhrase) \(body.prefix(300))", httpStatus: status)
    }
}
