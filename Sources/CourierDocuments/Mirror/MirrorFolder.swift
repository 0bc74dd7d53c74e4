import Courier
import Foundation

/// The mirror's own hidden folder, `<root>/.courier/`: coordination locks and upload
/// snapshots live there, never beside the user's documents. (Placeholders stay beside
/// their documents on purpose, as iCloud's `.name.icloud` files do.)
struct MirrorFolder: Sendable {
    let url: URL

    init(root: URL) {
        url = root.appendingPathComponent(".courier", isDirectory: true)
    }

    /// The lock file coordinating access to the document at `path`.
    func lock(for path: String) throws -> URL {
        try place("locks").appendingPathComponent(SHA256Hex.shortID("lock-", of: path))
    }

    /// Where the snapshot of `path` being uploaded is taken.
    func snapshot(for path: String) throws -> URL {
        try place("uploads").appendingPathComponent(SHA256Hex.shortID("upload-", of: path))
    }

    private func place(_ name: String) throws -> URL {
        let dir = url.appendingPathComponent(name, isDirectory: true)
        do { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) } catch {
            throw FileErrors.error(error, "create", dir, .write)
        }
        return dir
    }
}
