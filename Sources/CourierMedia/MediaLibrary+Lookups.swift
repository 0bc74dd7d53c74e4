import Courier
import Foundation

/// What an app plays and shows, found in the seed's discovery order. Offline: nothing here
/// asks the server.
extension MediaLibrary {
    /// The media file of exactly this version, when it is in the library (its metadata
    /// entry and its file).
    public nonisolated func mediaFile(for version: MediaVersion) -> URL? {
        guard MetadataStore(root: root).versions(forItem: version.itemId).contains(where: { $0.versionId == version.versionId }) else { return nil }
        return MediaDiscovery(root: root).mediaFile(itemId: version.itemId, mediaSourceId: version.versionId, exact: true)
    }

    /// The file to play for an item (seed 003's order): the version's own file
    /// (`*-<mediaSourceId>.*`), else any version of the item (`<itemId>-*`), else a legacy
    /// `Media.*`, searching season folders three levels deep.
    public nonisolated func mediaFile(itemId: String, mediaSourceId: String? = nil) -> URL? {
        MediaDiscovery(root: root).mediaFile(itemId: itemId, mediaSourceId: mediaSourceId)
    }

    /// The versions of an item in the library (its metadata entries).
    public nonisolated func downloadedVersions(itemId: String) -> [VersionInfo] {
        MetadataStore(root: root).versions(forItem: itemId)
    }

    /// An item's image (movie, series, season or episode). An episode's comes from its
    /// season's `Images/` first, then its series' (seed 003); a season without its own
    /// image shows its series'.
    public nonisolated func imageFile(itemId: String, kind: MediaLayout.ImageKind) -> URL? {
        guard (try? MediaLayout.component(itemId)) != nil else { return nil }   // no valid id: no image
        let downloads = root.appendingPathComponent(MediaLayout.downloads)
        let own = downloads.appendingPathComponent(itemId)
        if let hit = Self.image(in: own, stems: [kind.rawValue, "Series-\(itemId)-\(kind.rawValue)"]) { return hit }
        for series in Self.folders(in: downloads) {
            for season in Self.folders(in: series) where season.lastPathComponent.hasPrefix("Season-") {
                if let hit = Self.image(in: season, stems: ["Episode-\(itemId)-\(kind.rawValue)", "Season-\(itemId)-\(kind.rawValue)"]) { return hit }
                let meta = MetadataStore(root: root).read(season.appendingPathComponent("metadata.json"))
                if meta?.episodes?[itemId] != nil || meta?.itemId == itemId {
                    return Self.image(in: season, suffix: "-\(kind.rawValue)", prefix: "Season-")
                        ?? Self.image(in: series, suffix: "-\(kind.rawValue)", prefix: "Series-")
                }
            }
        }
        return nil
    }

    /// What a version's completed download reported, rebuilt from the library (for a
    /// subscriber that comes after the end, in another launch); `nil` when it is not there.
    nonisolated func completedReport(_ version: MediaVersion) -> MediaDownloadReport? {
        guard let entry = MetadataStore(root: root).versions(forItem: version.itemId).last(where: { $0.versionId == version.versionId }),
              let file = mediaFile(for: version) else { return nil }
        let relative = { (url: URL) in (try? self.relativePath(url)) ?? url.path }   // a file outside the root is named whole
        let folder = file.deletingLastPathComponent()
        return MediaDownloadReport(mediaPath: relative(file), versionId: version.versionId, failedImages: [],
                                   subtitlePaths: (entry.subtitles ?? []).map { relative(folder.appendingPathComponent($0.fileName)) })
    }

    private static func folders(in folder: URL) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.isDirectoryKey])) ?? [])   // a folder that cannot be listed holds nothing to show
            .filter { (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true }   // not inspectable: not a folder to search
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    private static func imageNames(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("Images").path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()   // no Images folder: no images
    }

    private static func image(in folder: URL, stems: [String]) -> URL? {
        let names = imageNames(in: folder)
        for stem in stems {
            if let name = names.first(where: { ($0 as NSString).deletingPathExtension == stem }) { return folder.appendingPathComponent("Images/\(name)") }
        }
        return nil
    }

    private static func image(in folder: URL, suffix: String, prefix: String) -> URL? {
        imageNames(in: folder).first { $0.hasPrefix(prefix) && ($0 as NSString).deletingPathExtension.hasSuffix(suffix) }.map { folder.appendingPathComponent("Images/\($0)") }
    }
}
