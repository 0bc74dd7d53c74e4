import Courier
import Foundation

/// Finds media and images in the seed's order.
struct MediaDiscovery {
    let root: URL
    var downloads: URL { root.appendingPathComponent(MediaLayout.downloads) }

    /// Every extension a media file may have: each the MIME rule can give, and `ts` and
    /// `mov` containers a source may name.
    static let mediaExtensions: Set<String> = Set(MediaFileTypes.mediaTypes.values).union(["mp4", "mkv", "mov", "ts"])

    /// 1. version-specific (`*-<mediaSourceId>.*`), 2. item-based (`<itemId>-*`), 3. legacy
    /// `Media.*` in the item's own folder, 4. recursive search of season folders, 3 levels deep.
    /// `exact`: this version's own file (or a legacy `Media.*`, the item's own version) or
    /// none: whether a version is in the library (the item-based fallback would answer with
    /// another version's file).
    func mediaFile(itemId: String, mediaSourceId: String?, exact: Bool = false) -> URL? {
        guard (try? MediaLayout.component(itemId)) != nil, mediaSourceId.map({ (try? MediaLayout.component($0)) != nil }) ?? true else { return nil }   // a validity check: the reason is not needed
        let candidates = files(in: downloads, depth: 3).filter { Self.mediaExtensions.contains($0.pathExtension.lowercased()) }
        let version = mediaSourceId ?? itemId
        if let hit = candidates.first(where: { $0.deletingPathExtension().lastPathComponent == "\(itemId)-\(version)" }) { return hit }
        if !exact, let hit = candidates.first(where: { $0.lastPathComponent.hasPrefix("\(itemId)-") }) { return hit }
        if let hit = candidates.first(where: { $0.deletingPathExtension().lastPathComponent == "Media" && $0.deletingLastPathComponent().lastPathComponent == itemId }) {
            return hit
        }
        return nil
    }

    /// An image for an episode: its season's Images first, then the series'.
    func image(seriesFolder: URL, seasonFolder: URL?, prefix: String, kind: MediaLayout.ImageKind) -> URL? {
        for folder in [seasonFolder, seriesFolder].compactMap({ $0?.appendingPathComponent("Images") }) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []   // a folder that cannot be listed holds nothing to show
            if let name = names.sorted().first(where: { $0.hasPrefix("\(prefix)\(kind.rawValue)") }) { return folder.appendingPathComponent(name) }
        }
        return nil
    }

    /// Regular files under `folder`, at most `depth` levels down, hidden ones excluded.
    func files(in folder: URL, depth: Int) -> [URL] {
        guard depth >= 0, let entries = try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.isDirectoryKey, .isSymbolicLinkKey]) else { return [] }   // a folder that cannot be listed holds nothing to show
        var out: [URL] = []
        for entry in entries.sorted(by: { $0.lastPathComponent < $1.lastPathComponent }) where !entry.lastPathComponent.hasPrefix(".") {
            let values = try? entry.resourceValues(forKeys: [.isDirectoryKey, .isSymbolicLinkKey])   // an entry that cannot be inspected is skipped
            if values?.isSymbolicLink == true { continue }
            if values?.isDirectory == true { out += files(in: entry, depth: depth - 1) } else { out.append(entry) }
        }
        return out
    }

    /// Total bytes of regular files below a folder.
    static func directorySize(_ folder: URL) -> Int64 {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in walker {
            let v = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])   // a file that cannot be inspected is not offered
            if v?.isRegularFile == true { total += Int64(v?.fileSize ?? 0) }
        }
        return total
    }

    /// Removes folders that hold nothing (depth first), never `Downloads/` itself.
    static func removeEmptyFolders(_ downloads: URL) {
        func sweep(_ folder: URL) -> Bool {
            let entries = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.isDirectoryKey])) ?? []   // a folder that cannot be listed holds nothing to show
            var empty = true
            for entry in entries {
                if (try? entry.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true, sweep(entry) {   // not a folder we can inspect: left alone
                    try? FileManager.default.removeItem(at: entry)   // an empty folder left behind harms nothing; the next sweep tries again
                } else {
                    empty = false
                }
            }
            return empty
        }
        _ = sweep(downloads)
    }
}
