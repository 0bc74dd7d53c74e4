import Foundation

/// `metadata.json` (seed 003): an item and every downloaded version of it.
public struct DownloadMetadata: Codable, Sendable, Equatable {
    /// The item (movie, series or season) the file describes.
    public var itemId: String
    /// Its kind, as Jellyfin names it.
    public var itemType: String?
    /// Its title.
    public var displayTitle: String
    /// The full item payload.
    public var item: MediaItem?
    /// Every downloaded version (at series level: aggregated from the seasons).
    public var versions: [VersionInfo]
    /// Season level: the episodes' items, by id.
    public var episodes: [String: MediaItem]?

    /// Makes metadata.
    public init(itemId: String, itemType: String?, displayTitle: String, item: MediaItem?, versions: [VersionInfo], episodes: [String: MediaItem]? = nil) {
        self.itemId = itemId; self.itemType = itemType; self.displayTitle = displayTitle; self.item = item; self.versions = versions; self.episodes = episodes
    }
}

/// One downloaded version (seed 003).
public struct VersionInfo: Codable, Sendable, Equatable {
    /// The version id: the media source id, else the item id.
    public var versionId: String
    /// The file's container (`mp4`, `mkv`): its extension, which follows the reply's MIME
    /// type, else the media source's container.
    public var container: String
    /// Whether it was a static (not transcoded) download.
    public var isStatic: Bool
    /// The Jellyfin media source id (`nil` means the item id).
    public var mediaSourceId: String?
    /// ISO 8601 time of the download.
    public var downloadDate: String
    /// The download task's id.
    public var taskId: String
    /// The item the version belongs to (an episode at season and series level).
    public var itemId: String?
    /// The media file's name in its folder; `nil` in files written before it was kept.
    public var fileName: String?
    /// The subtitle files downloaded beside the media.
    public var subtitles: [SubtitleFile]?
    /// For a transcoded download: what was asked of the server.
    public var transcoding: TranscodeOptions?

    /// Makes a version entry.
    public init(versionId: String, container: String, isStatic: Bool, mediaSourceId: String?, downloadDate: String, taskId: String, itemId: String? = nil,
                fileName: String? = nil, subtitles: [SubtitleFile]? = nil, transcoding: TranscodeOptions? = nil) {
        self.versionId = versionId; self.container = container; self.isStatic = isStatic; self.mediaSourceId = mediaSourceId
        self.downloadDate = downloadDate; self.taskId = taskId; self.itemId = itemId
        self.fileName = fileName; self.subtitles = subtitles; self.transcoding = transcoding
    }

    /// The media source id with `nil` normalised to the item id (seed 003's comparison rule).
    public func normalizedSource(itemId: String) -> String { mediaSourceId ?? itemId }
}

/// A subtitle downloaded beside its media: `<itemId>-<versionId>.<index>[.<language>].<ext>`.
public struct SubtitleFile: Codable, Sendable, Equatable {
    /// The stream's index in its media source.
    public var index: Int
    /// The language, when the server said.
    public var language: String?
    /// The format, as the file's extension: `srt`, `vtt`, `ass`, `ssa`.
    public var format: String
    /// The file's name, in the media file's folder.
    public var fileName: String

    /// Makes an entry.
    public init(index: Int, language: String?, format: String, fileName: String) {
        self.index = index; self.language = language; self.format = format; self.fileName = fileName
    }
}
