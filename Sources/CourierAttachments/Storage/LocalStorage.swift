import Foundation

/// Where an ``AttachmentQueue`` keeps its attachment files on the device. The queue does
/// every local file operation through it, so an app can keep attachments encrypted, in an
/// app-group container, or anywhere else. ``FileSystemLocalStorage`` (plain files in one
/// directory) is the default.
///
/// Files are named by the attachment's `filename` (a relative path, already checked with
/// `SafePath`). Implementations stream: no method may need a whole file in memory, except
/// ``save(_:as:)``, which is given the bytes.
public protocol LocalStorage: Sendable {
    /// The folder the resumable engine downloads into: its `.partial` files and the finished
    /// file, named by the attachment's `filename`, which ``takeDownload(_:)`` then takes.
    /// For plain files this is the attachments directory itself, so nothing is copied.
    var stagingDirectory: URL { get }

    /// Stores `data` as the file `filename`, whole or not at all; returns its size in bytes.
    func save(_ data: Data, as filename: String) async throws -> Int64
    /// Stores the file at `source` (read, never moved) as `filename`, streamed, whole or
    /// not at all; returns its size in bytes.
    func save(from source: URL, as filename: String) async throws -> Int64
    /// Whether the file `filename` is there.
    func exists(_ filename: String) -> Bool
    /// Removes the file `filename` and anything staged for it (a `.partial` in
    /// ``stagingDirectory``); a missing one is fine.
    func remove(_ filename: String) throws
    /// Removes every attachment file and everything staged; the storage stays usable.
    func removeAll() throws
    /// Runs `body` with a plain, readable file holding `filename`'s bytes (for an upload),
    /// then releases it (a decrypted temporary copy is deleted).
    func withReadableFile<T: Sendable>(_ filename: String, _ body: @Sendable (URL) async throws -> T) async throws -> T
    /// Takes the finished download of `filename` from ``stagingDirectory`` into the store;
    /// returns the file's size in bytes. The staged file is gone or in place afterwards.
    func takeDownload(_ filename: String) async throws -> Int64
    /// The file an app can open directly, when the storage keeps plain files; else `nil`.
    func plainFileURL(_ filename: String) -> URL?
}
