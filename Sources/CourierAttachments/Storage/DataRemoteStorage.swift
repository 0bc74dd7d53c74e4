import Courier
import Foundation

/// A remote storage that moves whole files as `Data`, as PowerSync's Swift SDK defines
/// its `RemoteStorageAdapter`: bring such an adapter over unchanged, and wrap it in a
/// ``DataRemoteStorage``.
public protocol DataRemoteStorageAdapter: Sendable {
    /// Sends the attachment's bytes (PowerSync's SDK spells it so). Implement this one or
    /// ``uploadFile(data:attachment:)``: each defaults to the other.
    /// - Parameters:
    ///   - fileData: the whole file.
    ///   - attachment: its record.
    func uploadFile(fileData: Data, attachment: Attachment) async throws
    /// Sends the attachment's bytes, as seed 001's example spells it.
    func uploadFile(data: Data, attachment: Attachment) async throws
    /// Returns the attachment's bytes.
    /// - Parameter attachment: its record.
    func downloadFile(attachment: Attachment) async throws -> Data
    /// Deletes the attachment remotely.
    /// - Parameter attachment: its record.
    func deleteFile(attachment: Attachment) async throws
}

extension DataRemoteStorageAdapter {
    public func uploadFile(fileData: Data, attachment: Attachment) async throws {
        try await UploadSpelling.either(Self.self) { try await uploadFile(data: fileData, attachment: attachment) }
    }
    public func uploadFile(data: Data, attachment: Attachment) async throws {
        try await UploadSpelling.either(Self.self) { try await uploadFile(fileData: data, attachment: attachment) }
    }
}

/// The two spellings of an adapter's upload default to each other; an adapter that
/// implements neither fails with a code instead of recursing without end. Kept per adapter
/// type: one that forwards to another adapter through the other spelling is no loop.
enum UploadSpelling {
    @TaskLocal static var inDefault: Set<ObjectIdentifier> = []
    static func either(_ adapter: Any.Type, _ other: () async throws -> Void) async throws {
        let key = ObjectIdentifier(adapter)
        guard !inDefault.contains(key) else {
            throw CourierError(.invalidArgument, "the remote storage adapter \(adapter) implements neither uploadFile(fileData:attachment:) nor uploadFile(data:attachment:)")
        }
        try await $inDefault.withValue(inDefault.union([key])) { try await other() }
    }
}

/// A ``RemoteStorage`` over a ``DataRemoteStorageAdapter``: an upload reads the file into
/// memory, a download writes the returned bytes whole or not at all. Whole-file buffers
/// run phones out of memory, so a file larger than ``maxInMemoryBytes`` fails with
/// `CourierError.Code.attachmentTooLarge` instead of being read; prefer a
/// streaming storage (``HTTPRemoteStorage``, ``S3RemoteStorage``) for large files.
public struct DataRemoteStorage: RemoteStorage {
    /// The wrapped adapter.
    public let adapter: any DataRemoteStorageAdapter
    /// The largest file held in memory, in bytes.
    public let maxInMemoryBytes: Int64

    /// Wraps `adapter`.
    /// - Parameters:
    ///   - adapter: the `Data`-based storage.
    ///   - maxInMemoryBytes: the largest file read into memory (default 256 MiB).
    public init(wrapping adapter: any DataRemoteStorageAdapter, maxInMemoryBytes: Int64 = 256 << 20) {
        self.adapter = adapter
        self.maxInMemoryBytes = maxInMemoryBytes
    }

    /// Reads the file (refused over ``maxInMemoryBytes``) and hands it to the adapter.
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        let size = try HTTPCalls.size(of: file)
        guard size <= maxInMemoryBytes else {
            throw CourierError(.attachmentTooLarge, "\(attachment.filename) has \(size) bytes, over the \(maxInMemoryBytes) a Data-based storage may hold in memory")
        }
        let data: Data
        do { data = try Data(contentsOf: file) } catch { throw FileErrors.error(error, "read", file, .read) }
        try await Self.mapped("upload of \(attachment.filename)") { try await adapter.uploadFile(fileData: data, attachment: attachment) }
    }

    /// Asks the adapter for the bytes (refused beforehand when the record's size is over
    /// ``maxInMemoryBytes``) and writes them atomically to `destination`.
    public func download(_ attachment: Attachment, to destination: URL) async throws {
        if let size = attachment.size, size > maxInMemoryBytes {
            throw CourierError(.attachmentTooLarge, "\(attachment.filename) has \(size) bytes, over the \(maxInMemoryBytes) a Data-based storage may hold in memory")
        }
        let data = try await Self.mapped("download of \(attachment.filename)") { try await adapter.downloadFile(attachment: attachment) }
        try Durability.createFolder(destination.deletingLastPathComponent())
        try AtomicWrite.write(data, to: destination)
    }

    /// Asks the adapter to delete.
    public func delete(_ attachment: Attachment) async throws {
        try await Self.mapped("delete of \(attachment.filename)") { try await adapter.deleteFile(attachment: attachment) }
    }

    /// The adapter's errors leave as `CourierError`s (its own pass unchanged).
    static func mapped<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as CourierError { throw error } catch {
            throw CourierError(.remoteStorage, "\(what) failed", underlying: error)
        }
    }
}
