import Courier
import Foundation

/// The old layout (seed 003's "legacy compatibility"): an item's own folder
/// `Downloads/<itemId>/` with `Media.<ext>`, `Metadata/Item.json` (the BaseItemDto) and
/// `Images/`; episodes each in their own folder rather than under their series.
struct LegacyLayout {
    let root: URL
    var downloads: URL { root.appendingPathComponent(MediaLayout.downloads) }

    /// Folders holding `Metadata/Item.json`.
    func legacyFolders() -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: downloads, includingPropertiesForKeys: nil)) ?? [])   // a folder that cannot be listed holds nothing to show
            .filter { FileManager.default.fileExists(atPath: $0.appendingPathComponent("Metadata/Item.json").path) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    func item(in folder: URL) -> MediaItem? {
        guard let data = try? Data(contentsOf: folder.appendingPathComponent("Metadata/Item.json")) else { return nil }   // no legacy metadata: not a legacy folder
        return try? JSONDecoder().decode(MediaItem.self, from: data)   // unreadable legacy metadata: not migrated, left in place
    }

    func legacyMedia(in folder: URL) -> URL? {
        ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])   // a folder that cannot be listed holds nothing to show
            .first { $0.deletingPathExtension().lastPathComponent == "Media" && !$0.pathExtension.isEmpty }
    }
}

extension MediaLibrary {
    /// Moves legacy items into the current layout: the media file renamed
    /// `<itemId>-<itemId>.<ext>` in its current folder, images renamed, `metadata.json`
    /// written; the legacy folder goes only after the new metadata is written. Returns the
    /// migrated item ids.
    @discardableResult
    public func migrate() throws -> [String] {
        let legacy = LegacyLayout(root: root)
        let store = MetadataStore(root: root)
        var migrated: [String] = []
        for folder in legacy.legacyFolders() {
            guard let item = legacy.item(in: folder), item.id == folder.lastPathComponent, (try? MediaLayout.component(item.id)) != nil else { continue }   // a validity check: the reason is not needed
            guard let media = legacy.legacyMedia(in: folder) else { continue }
            let container = try MediaLayout.component(media.pathExtension, "extension")
            let target = root.appendingPathComponent(try MediaLayout.mediaFile(item, versionId: item.id, container: container))
            try Durability.createFolder(target.deletingLastPathComponent())
            guard rename(media.path, target.path) == 0 else { throw FileErrors.error(errno, "move \(item.id)'s media into the new layout:", target, .write) }
            // Images: Images/Primary.* and Backdrop.* keep their place for movies; episodes' move to the season.
            let oldImages = folder.appendingPathComponent("Images")
            if item.type == .episode {
                for kind in MediaLayout.ImageKind.allCases {
                    guard let old = ((try? FileManager.default.contentsOfDirectory(at: oldImages, includingPropertiesForKeys: nil)) ?? [])   // a folder that cannot be listed holds nothing to show
                        .first(where: { $0.deletingPathExtension().lastPathComponent == kind.rawValue }) else { continue }
                    let new = root.appendingPathComponent(try MediaLayout.image(.episode(item), kind, ext: old.pathExtension.isEmpty ? "jpeg" : old.pathExtension))
                    try Durability.createFolder(new.deletingLastPathComponent())
                    _ = rename(old.path, new.path)
                }
            }
            let date = ((try? FileManager.default.attributesOfItem(atPath: target.path))?[.modificationDate] as? Date) ?? Date()   // no date: now
            let entry = VersionInfo(versionId: item.id, container: container, isStatic: true, mediaSourceId: nil,
                                    downloadDate: ISO8601DateFormatter().string(from: date), taskId: "legacy", itemId: item.id)
            try store.record(entry, for: item, series: nil)   // removes <itemFolder>/Metadata after writing
            if item.type == .episode {
                // The old per-episode folder goes only now that the season metadata exists.
                try? FileManager.default.removeItem(at: folder)   // the migrated copy is in place; a leftover legacy folder is ignored
            }
            migrated.append(item.id)
        }
        MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
        return migrated
    }
}
