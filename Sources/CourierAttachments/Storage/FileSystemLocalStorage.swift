import Courier
import Foundation

/// Attachments as plain files in one directory, named by their file names: the default
/// ``LocalStorage``. The directory is the queue's own (``removeAll()`` empties it); the
/// resumable engine downloads straight into it, so a finished download needs no copy.
public struct FileSystemLocalStorage: LocalStorage {
    /// The directory holding the files.
    public let directory: URL

    /// Uses (and creates) `directory`.
    public init(directory: URL) throws {
        self.directory = directory.standardizedFileURL
        do { try Durability.createFolder(self.directory) } catch {
            throw FileErrors.error(error, "create", self.directory, .write)
        }
    }

    /// The attachments directory itself.
    public var stagingDirectory: URL { directory }

    func url(_ filename: String) throws -> URL {
        directory.appendingPathComponent(try SafePath.validateRelative(filename))
    }

    /// Writes the bytes atomically (temporary file, sync, rename).
    public func save(_ data: Data, as filename: String) async throws -> Int64 {
        let target = try url(filename)
        try Durability.createFolder(target.deletingLastPathComponent())
        try AtomicWrite.write(data, to: target)
        return Int64(data.count)
    }

    /// Copies the file in 1 MiB pieces, atomically.
    public func save(from source: URL, as filename: String) async throws -> Int64 {
        let target = try url(filename)
        try FileCopy.atomicCopy(from: source, to: target)
        return PartialFile.length(at: target)
    }

    /// Whether the file is there.
    public func exists(_ filename: String) -> Bool {
        guard let target = try? url(filename) else { return false }   // a name that cannot be a file here is not there
        return FileManager.default.fileExists(atPath: target.path)
    }

    /// Unlinks the file and its `.partial`.
    public func remove(_ filename: String) throws {
        let target = try url(filename)
        for path in [target.path, target.path + ".partial"] where unlink(path) != 0 && errno != ENOENT {
            throw FileErrors.error(errno, "remove", URL(fileURLWithPath: path), .write)
        }
    }

    /// Removes everything in the directory (files, `.partial` files, folders), keeping it.
    public func removeAll() throws {
        let items: [URL]
        do { items = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil) } catch {
            throw FileErrors.error(error, "list", directory, .write)
        }
        for item in items {
            do { try FileManager.default.removeItem(at: item) } catch { throw FileErrors.error(error, "remove", item, .write) }
        }
    }

    /// The file itself: it is plain already.
    public func withReadableFile<T: Sendable>(_ filename: String, _ body: @Sendable (URL) async throws -> T) async throws -> T {
        let target = try url(filename)
        guard FileManager.default.fileExists(atPath: target.path) else {
            throw CourierError(.fileNotFound, "the attachment file \(filename) is missing")
        }
        return try await body(target)
    }

    /// Nothing to move: the engine wrote the file in place.
    public func takeDownload(_ filename: String) async throws -> Int64 {
        let target = try url(filename)
        guard FileManager.default.fileExists(atPath: target.path) else {
            throw CourierError(.fileNotFound, "the downloaded file \(filename) is missing")
        }
        return PartialFile.length(at: target)
    }

    /// `directory/filename`.
    public func plainFileURL(_ filename: String) -> URL? { try? url(filename) }   // an invalid name has no file
}
