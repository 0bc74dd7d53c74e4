import Courier
import Foundation

/// Reads and writes `metadata.json` files atomically (temp file, fsync, rename), so a crash
/// never leaves half a JSON file.
struct MetadataStore {
    let root: URL

    var downloads: URL { root.appendingPathComponent(MediaLayout.downloads) }

    func read(_ file: URL) -> DownloadMetadata? {
        guard let data = try? Data(contentsOf: file) else { return nil }   // no metadata file: nothing downloaded there
        return try? JSONDecoder().decode(DownloadMetadata.self, from: data)   // unreadable metadata reads as none; the next download rewrites it
    }

    /// The metadata at `file` for a write that adds to it. A file that exists but cannot
    /// be read is moved aside (`metadata.json.corrupt`, for whoever wants to look) and its
    /// versions are rebuilt from the media files beside it, so one bad write never drops
    /// the other versions' entries.
    func readForUpdate(_ file: URL, itemId: String?) -> (metadata: DownloadMetadata?, recovered: [VersionInfo]) {
        guard FileManager.default.fileExists(atPath: file.path) else { return (nil, []) }
        if let meta = read(file) { return (meta, []) }
        _ = rename(file.path, file.path + ".corrupt")   // kept for inspection when it can be; the rebuild does not depend on it
        return (nil, recoveredVersions(in: file.deletingLastPathComponent(), itemId: itemId))
    }

    /// Version entries for the media files in `folder`: `<itemId>-<versionId>.<ext>` (the
    /// item id given, or up to the first `-` in a season folder, as Jellyfin ids have none).
    func recoveredVersions(in folder: URL, itemId: String?) -> [VersionInfo] {
        let files = MediaDiscovery(root: root).files(in: folder, depth: 0).filter { MediaDiscovery.mediaExtensions.contains($0.pathExtension.lowercased()) }
        return files.compactMap { file in
            let stem = file.deletingPathExtension().lastPathComponent
            let owner: String
            if let itemId { guard stem.hasPrefix(itemId + "-") else { return nil }; owner = itemId }
            else { guard let dash = stem.firstIndex(of: "-") else { return nil }; owner = String(stem[..<dash]) }
            let version = String(stem.dropFirst(owner.count + 1))
            guard !version.isEmpty else { return nil }
            let date = ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date) ?? Date()   // no date: now
            return VersionInfo(versionId: version, container: file.pathExtension, isStatic: !version.contains("-t-"), mediaSourceId: version == owner ? nil : version,
                               downloadDate: ISO8601DateFormatter().string(from: date), taskId: "recovered", itemId: owner, fileName: file.lastPathComponent)
        }
    }

    func write(_ metadata: DownloadMetadata, to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(metadata)
        try Durability.createFolder(file.deletingLastPathComponent())
        try AtomicWrite.write(data, to: file)
    }

    /// Adds (or replaces: same normalised media source) a version of an item, at movie level,
    /// or at season level with the series aggregating its seasons. Legacy `Metadata/` goes
    /// only after the new metadata is written.
    func record(_ version: VersionInfo, for item: MediaItem, series: MediaItem?, season: MediaItem? = nil) throws {
        // Seed 003's deduplication: an entry of the same item with the same version id goes,
        // and so does a static one of the same (normalised) media source when this one is
        // static too. A transcoded copy has a version id of its own and sits beside them.
        func merged(_ versions: [VersionInfo]) -> [VersionInfo] {
            versions.filter { old in
                guard old.itemId ?? item.id == item.id else { return true }
                if old.versionId == version.versionId { return false }
                return !(old.isStatic && version.isStatic && old.normalizedSource(itemId: item.id) == version.normalizedSource(itemId: item.id))
            } + [version]
        }
        let itemFolder = root.appendingPathComponent(try MediaLayout.itemFolder(item))
        switch item.type {
        case .movie:
            let file = itemFolder.appendingPathComponent("metadata.json")
            let (existing, recovered) = readForUpdate(file, itemId: item.id)
            var meta = existing ?? DownloadMetadata(itemId: item.id, itemType: item.type.rawValue, displayTitle: item.name ?? item.id, item: item, versions: recovered)
            meta.item = item
            meta.versions = merged(meta.versions)
            try write(meta, to: file)
        case .episode:
            let seasonFolder = root.appendingPathComponent(try MediaLayout.seasonFolder(item))
            let file = seasonFolder.appendingPathComponent("metadata.json")
            let seasonId = item.seasonId ?? "\(item.seriesId ?? "")-\(item.parentIndexNumber ?? 0)"
            let (existing, recovered) = readForUpdate(file, itemId: nil)
            // The season's own item (its name, overview, images) when the server gave it; a
            // title made from the number only when it did not.
            let seasonItem = season.flatMap { $0.id == seasonId ? $0 : nil }
            var meta = existing ?? DownloadMetadata(itemId: seasonId, itemType: "Season",
                                                    displayTitle: "Season \(item.parentIndexNumber ?? 0)", item: nil, versions: recovered, episodes: [:])
            if let seasonItem {
                meta.item = seasonItem
                meta.displayTitle = seasonItem.name ?? meta.displayTitle
            }
            meta.versions = merged(meta.versions)
            meta.episodes = (meta.episodes ?? [:]).merging([item.id: item]) { $1 }
            try write(meta, to: file)
            try reaggregateSeries(folder: itemFolder, series: series, fallbackTitle: item.seriesName)
        default:
            throw CourierError(.invalidArgument, "metadata is kept for movies and episodes")
        }
        let legacy = itemFolder.appendingPathComponent("Metadata")
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: legacy.path, isDirectory: &isDir), isDir.boolValue {
            try? FileManager.default.removeItem(at: legacy)   // the legacy file is superseded; a leftover is ignored
        }
    }

    /// Rewrites the series' `metadata.json` from its seasons' (or removes it when none is left).
    func reaggregateSeries(folder: URL, series: MediaItem? = nil, fallbackTitle: String? = nil) throws {
        let file = folder.appendingPathComponent("metadata.json")
        let seasons = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])   // a folder that cannot be listed holds nothing to show
            .filter { $0.lastPathComponent.hasPrefix("Season-") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let versions = seasons.flatMap { read($0.appendingPathComponent("metadata.json"))?.versions ?? [] }
        guard !seasons.isEmpty else { unlink(file.path); return }
        let existing = read(file)
        let id = series?.id ?? existing?.itemId ?? folder.lastPathComponent
        try write(DownloadMetadata(itemId: id, itemType: "Series", displayTitle: series?.name ?? existing?.displayTitle ?? fallbackTitle ?? id,
                                   item: series ?? existing?.item, versions: versions), to: file)
    }

    /// Drops a version's entries below `folder` (movie or series with seasons).
    func removeVersion(_ versionId: String, under folder: URL) throws {
        let movieFile = folder.appendingPathComponent("metadata.json")
        let seasons = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []).filter { $0.lastPathComponent.hasPrefix("Season-") }   // a folder that cannot be listed holds nothing to show
        if seasons.isEmpty {
            if var meta = read(movieFile) {
                meta.versions.removeAll { $0.versionId == versionId }
                if meta.versions.isEmpty { unlink(movieFile.path) } else { try write(meta, to: movieFile) }
            }
            return
        }
        for season in seasons {
            let file = season.appendingPathComponent("metadata.json")
            if var meta = read(file) {
                meta.versions.removeAll { $0.versionId == versionId }
                try write(meta, to: file)
            }
        }
        try reaggregateSeries(folder: folder)
    }

    /// The folder whose metadata lists `itemId`'s versions: the movie's own, or the series'
    /// whose season metadata names the episode; `nil` when none does.
    func folder(holding itemId: String) -> URL? {
        guard (try? MediaLayout.component(itemId)) != nil else { return nil }   // a validity check: the reason is not needed
        let movie = downloads.appendingPathComponent(itemId)
        if read(movie.appendingPathComponent("metadata.json")) != nil { return movie }
        for series in (try? FileManager.default.contentsOfDirectory(at: downloads, includingPropertiesForKeys: nil)) ?? [] {   // a folder that cannot be listed holds nothing to show
            for season in ((try? FileManager.default.contentsOfDirectory(at: series, includingPropertiesForKeys: nil)) ?? []) where season.lastPathComponent.hasPrefix("Season-") {   // a folder that cannot be listed holds nothing to show
                if read(season.appendingPathComponent("metadata.json"))?.versions.contains(where: { $0.itemId == itemId }) == true { return series }
            }
        }
        return nil
    }

    /// Every version recorded for an item: its own metadata (movie), or season metadata
    /// naming it (episode); legacy `Metadata/Item.json` as a fallback.
    func versions(forItem itemId: String) -> [VersionInfo] {
        guard (try? MediaLayout.component(itemId)) != nil else { return [] }   // a validity check: the reason is not needed
        let movie = downloads.appendingPathComponent(itemId).appendingPathComponent("metadata.json")
        if let meta = read(movie) { return meta.versions }
        // Legacy: Metadata/Item.json beside a Media.* file counts as the item's own version.
        let legacy = LegacyLayout(root: root)
        let folder = downloads.appendingPathComponent(itemId)
        if legacy.item(in: folder)?.id == itemId, let media = legacy.legacyMedia(in: folder) {
            return [VersionInfo(versionId: itemId, container: media.pathExtension, isStatic: true, mediaSourceId: nil, downloadDate: "", taskId: "legacy", itemId: itemId)]
        }
        var found: [VersionInfo] = []
        for series in (try? FileManager.default.contentsOfDirectory(at: downloads, includingPropertiesForKeys: nil)) ?? [] {   // a folder that cannot be listed holds nothing to show
            for season in ((try? FileManager.default.contentsOfDirectory(at: series, includingPropertiesForKeys: nil)) ?? []) where season.lastPathComponent.hasPrefix("Season-") {   // a folder that cannot be listed holds nothing to show
                found += read(season.appendingPathComponent("metadata.json"))?.versions.filter { $0.itemId == itemId } ?? []
            }
        }
        return found
    }
}
