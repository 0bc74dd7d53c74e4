import Foundation

/// The named partial file a run's attempt opened or created: its path and identity. A
/// cancel elsewhere deletes the partial, then the record; one that lands while the run waits
/// for its reply finds no file, and the run creates it afterwards. So a run stopped
/// externally whose record is gone deletes this file, if the path still names it
/// (``DownloadRun/dropOrphanedPartial()``).
final class OpenedPartial: Sendable {
    private let opened = Locked<(url: URL, identity: (device: UInt64, inode: UInt64))?>(nil)

    func set(_ url: URL, _ identity: (device: UInt64, inode: UInt64)?) { opened.withLock { $0 = identity.map { (url, $0) } } }

    /// The file, once.
    func take() -> (url: URL, identity: (device: UInt64, inode: UInt64))? { opened.withLock { value in defer { value = nil }; return value } }
}
