import Courier
import CourierAttachments
import Foundation

/// What stands in for a remote file not downloaded yet: a hidden sidecar
/// `.<name>.courier` beside where the file will be (as iCloud's `.<name>.icloud`),
/// recording the remote object it stands for: key, size and validator.
public typealias Placeholder = RemoteObject

extension RemoteObject {
    /// The placeholder sidecar's URL for the document at `url`.
    public static func url(for url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).courier")
    }

    static func read(for url: URL) -> Placeholder? {
        guard let data = try? Data(contentsOf: Self.url(for: url)) else { return nil }   // no placeholder file: not a placeholder
        return try? JSONDecoder().decode(Placeholder.self, from: data)   // a file that is not our JSON is not a placeholder
    }

    func write(for url: URL) throws {
        let target = Self.url(for: url)
        try Durability.createFolder(target.deletingLastPathComponent())
        try JSONEncoder().encode(self).write(to: target, options: .atomic)
    }
}
