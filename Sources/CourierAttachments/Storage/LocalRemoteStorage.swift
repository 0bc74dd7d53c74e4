import Courier
import Foundation

/// A directory as remote storage: for tests, and for apps that sync a folder.
public struct LocalRemoteStorage: ConditionalRemoteStorage {
    /// The directory holding the attachments, one file per attachment, named by its file name.
    public let directory: URL

    /// Uses (and creates) `directory`.
    public init(directory: URL) throws {
        self.directory = directory
        try Durability.createFolder(directory)
    }

    private func url(for attachment: Attachment) throws -> URL {
        directory.appendingPathComponent(try SafePath.validateRelative(attachment.filename))
    }

    /// Copies the file in, atomically (temp file, then rename).
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        let target = try url(for: attachment)
        try FileCopy.atomicCopy(from: file, to: target)
    }

    /// Copies the file in if the precondition holds (checked just before the copy: another
    /// process writing between the check and the rename is not excluded). Returns the new version.
    public func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition) async throws -> String? {
        try precondition.check(current: try await version(of: attachment), attachment.filename)
        try await upload(fileAt: file, attachment: attachment)
        return try await version(of: attachment)
    }

    /// The file's version as its listing gives it (size and modification time in milliseconds); `nil` when absent.
    public func version(of attachment: Attachment) async throws -> String? {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: try url(for: attachment).path),   // no such file: no version
              let size = (attrs[.size] as? NSNumber)?.int64Value, let date = attrs[.modificationDate] as? Date else { return nil }
        return Self.etag(size: size, modified: date)
    }

    /// A file's ETag here: its size and modification time in milliseconds.
    static func etag(size: Int64, modified: Date?) -> String {
        "\"\(size)-\(Int64((modified?.timeIntervalSince1970 ?? 0) * 1000))\""
    }

    /// Copies the file out, atomically. A missing file is `CourierError/Code/remoteNotFound`.
    public func download(_ attachment: Attachment, to destination: URL) async throws {
        let source = try url(for: attachment)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw CourierError(.remoteNotFound, "\(attachment.filename) is not in the remote directory")
        }
        try FileCopy.atomicCopy(from: source, to: destination)
    }

    /// Removes the file; a missing one is fine.
    public func delete(_ attachment: Attachment) async throws {
        let target = try url(for: attachment)
        if unlink(target.path) != 0, errno != ENOENT {
            throw CourierError(.remoteStorage, "cannot delete \(attachment.filename): \(String(cString: strerror(errno)))")
        }
    }
}

/// Streaming, atomic file copies.
enum FileCopy {
    /// Copies in 1 MiB pieces to a temporary file beside the target, syncs, renames.
    static func atomicCopy(from source: URL, to target: URL) throws {
        try Durability.createFolder(target.deletingLastPathComponent())
        guard let input = FileHandle(forReadingAtPath: source.path) else {
            throw CourierError(.fileNotFound, "cannot read \(source.lastPathComponent)")
        }
        defer { try? input.close() }   // a read-only handle: nothing to lose on close
        let write = try AtomicWrite(replacing: target)
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try write.handle.write(contentsOf: chunk)
            }
            try write.commit()
        } catch {
            write.abandon()
            throw FileErrors.error(error, "copy to", target, .write)
        }
    }
}
