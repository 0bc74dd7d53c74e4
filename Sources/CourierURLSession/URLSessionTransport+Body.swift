import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTransport {
    /// The largest file body FoundationNetworking is given from memory (see `makeTask`).
    static let inMemoryBodyLimit: Int64 = 16 << 20

    /// The task for a request: a data task without a body, an upload task with one. A whole
    /// file is uploaded from itself; a byte range of one (an S3 part, a tus chunk) is first
    /// copied, 1 MiB at a time, to a file of its own, since URLSession uploads only whole
    /// files: memory stays bounded either way. The staged copy goes when the task ends.
    func makeTask(_ request: URLRequest, body: TransportRequestBody?) throws -> (URLSessionTask, StagedBody?) {
        switch body {
        case nil:
            return (session.dataTask(with: request), nil)
        case let .bytes(data):
            return (session.uploadTask(with: request, from: data), nil)
        case let .file(url, offset, length):
            #if canImport(FoundationNetworking)
            // FoundationNetworking (Linux) traps in its own code (a `try!` on curl_easy_pause,
            // EasyHandle.swift) when a transfer whose body comes from a file fails: a reset, a
            // reply that breaks HTTP. A body of up to 16 MiB (every S3 part and tus chunk at the
            // default sizes) goes from memory instead, where it fails as an error.
            if length <= Self.inMemoryBodyLimit {
                return (session.uploadTask(with: request, from: try StagedBody.read(url, offset: offset, length: length)), nil)
            }
            #endif
            if offset == 0, let size = try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber,   // unreadable: staged below, which reports it
               size.int64Value == length {
                return (session.uploadTask(with: request, fromFile: url), nil)
            }
            let staged = try StagedBody(copying: url, offset: offset, length: length)
            return (session.uploadTask(with: request, fromFile: staged.url), staged)
        }
    }
}

/// A byte range of a file copied to a temporary file of its own, for an upload task.
final class StagedBody: Sendable {
    let url: URL

    /// A byte range of a file, read into memory.
    static func read(_ source: URL, offset: Int64, length: Int64) throws -> Data {
        var data = Data(capacity: Int(length))
        do {
            try read(source, offset: offset, length: length) { data.append($0) }
        } catch {
            throw error as? CourierError ?? FileErrors.error(error, "read", source, .read)
        }
        return data
    }

    init(copying source: URL, offset: Int64, length: Int64) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let output = FileHandle(forWritingAtPath: url.path) else {
            throw CourierError(.fileWrite, "no room for the upload's staged part in \(url.deletingLastPathComponent().path)")
        }
        do {
            defer { try? output.close() }   // the copy is only read back by this upload; a lost close loses nothing it needs
            try Self.read(source, offset: offset, length: length) { try output.write(contentsOf: $0) }
        } catch {
            remove()
            throw error as? CourierError ?? FileErrors.error(error, "stage", url, .write)
        }
    }

    /// `length` bytes of `source` from `offset`, 1 MiB at a time, handed to `each`.
    private static func read(_ source: URL, offset: Int64, length: Int64, each: (Data) throws -> Void) throws {
        guard let input = FileHandle(forReadingAtPath: source.path) else {
            throw CourierError(.fileRead, "\(source.lastPathComponent) could not be opened for the upload")
        }
        defer { try? input.close() }   // read-only: closing loses nothing
        try input.seek(toOffset: UInt64(offset))
        var remaining = length
        while remaining > 0 {
            guard let data = try input.read(upToCount: Int(min(remaining, 1 << 20))), !data.isEmpty else {
                throw CourierError(.readFailed, "\(source.lastPathComponent) ended early while uploading: it changed under the upload")
            }
            try each(data)
            remaining -= Int64(data.count)
        }
    }

    /// Deletes the copy.
    func remove() {
        try? FileManager.default.removeItem(at: url)   // a temporary file: the system's cleaning takes what this leaves
    }
}
