import Courier
import Foundation

/// The mirror's own hidden folder, `<root>/.courier/`: coordination locks, upload
/// snapshots, downloads on their way in and a refused upload's remote version live there,
/// never beside the user's documents. (Placeholders stay beside
/// their documents on purpose, as iCloud's `.name.icloud` files do.)
struct MirrorFolder: Sendable {
    let url: URL

    init(root: URL) {
        url = root.appendingPathComponent(".courier", isDirectory: true)
    }

    /// Where a download of the document at `path` lands (with its `.partial`) before it is
    /// put in place, relative to the root.
    static func incoming(_ path: String) -> String { ".courier/incoming/" + path }

    /// The document a download's destination stands for (``incoming(_:)`` undone).
    static func document(forDestination destination: String) -> String {
        destination.hasPrefix(".courier/incoming/") ? String(destination.dropFirst(".courier/incoming/".count)) : destination
    }

    /// The lock file coordinating access to the document at `path`.
    func lock(for path: String) throws -> URL {
        try place("locks").appendingPathComponent(SHA256Hex.shortID("lock-", of: path))
    }

    /// Where the snapshot of `path` being uploaded is taken.
    func snapshot(for path: String) throws -> URL {
        try place("uploads").appendingPathComponent(SHA256Hex.shortID("upload-", of: path))
    }

    /// Where the remote's version of `path` lands when an upload is refused, before it is
    /// compared with the bytes sent and kept as a conflict copy.
    func remoteCopy(for path: String) throws -> URL {
        try place("conflicts").appendingPathComponent(SHA256Hex.shortID("remote-", of: path))
    }

    private func place(_ name: String) throws -> URL {
        let dir = url.appendingPathComponent(name, isDirectory: true)
        do { try Durability.createFolder(dir) } catch {
            throw FileErrors.error(error, "create", dir, .write)
        }
        return dir
    }
}
