import Foundation

/// The fields of Jellyfin's `BaseItemDto` the library needs (names as Jellyfin sends them).
public struct MediaItem: Codable, Sendable, Equatable {
    /// `Movie`, `Episode`, `Series`, `Season`.
    public enum Kind: String, Codable, Sendable { case movie = "Movie", episode = "Episode", series = "Series", season = "Season" }

    /// The item id.
    public var id: String
    /// The item's kind.
    public var type: Kind
    /// The display name.
    public var name: String?
    /// For an episode: its series.
    public var seriesId: String?
    /// For an episode: its series' name.
    public var seriesName: String?
    /// For an episode: its season.
    public var seasonId: String?
    /// For an episode: the season number (1 → `Season-01`).
    public var parentIndexNumber: Int?
    /// For an episode: the episode number.
    public var indexNumber: Int?
    /// The versions the server can send.
    public var mediaSources: [MediaSource]?
    /// Image tags by type (`Primary`, `Backdrop`, …).
    public var imageTags: [String: String]?
    /// Backdrop image tags.
    public var backdropImageTags: [String]?

    /// One downloadable version.
    public struct MediaSource: Codable, Sendable, Equatable {
        /// The media source id (the version id).
        public var id: String
        /// The container: `mp4`, `mkv`, …
        public var container: String?
        /// The size in bytes, when the server says.
        public var size: Int64?
        /// Makes a source.
        public init(id: String, container: String?, size: Int64? = nil) { self.id = id; self.container = container; self.size = size }
        enum CodingKeys: String, CodingKey { case id = "Id", container = "Container", size = "Size" }
    }

    enum CodingKeys: String, CodingKey {
        case id = "Id", type = "Type", name = "Name", seriesId = "SeriesId", seriesName = "SeriesName", seasonId = "SeasonId"
        case parentIndexNumber = "ParentIndexNumber", indexNumber = "IndexNumber", mediaSources = "MediaSources"
        case imageTags = "ImageTags", backdropImageTags = "BackdropImageTags"
    }

    /// Makes an item.
    public init(id: String, type: Kind, name: String? = nil, seriesId: String? = nil, seriesName: String? = nil, seasonId: String? = nil,
                parentIndexNumber: Int? = nil, indexNumber: Int? = nil, mediaSources: [MediaSource]? = nil) {
        self.id = id; self.type = type; self.name = name; self.seriesId = seriesId; self.seriesName = seriesName; self.seasonId = seasonId
        self.parentIndexNumber = parentIndexNumber; self.indexNumber = indexNumber; self.mediaSources = mediaSources
    }
}

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
    /// The container (`mp4`, `mkv`).
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

    /// Makes a version entry.
    public init(versionId: String, container: String, isStatic: Bool, mediaSourceId: String?, downloadDate: String, taskId: String, itemId: String? = nil) {
        self.versionId = versionId; self.container = container; self.isStatic = isStatic; self.mediaSourceId = mediaSourceId
        self.downloadDate = downloadDate; self.taskId = taskId; self.itemId = itemId
    }

    /// The media source id with `nil` normalised to the item id (seed 003's comparison rule).
    public func normalizedSource(itemId: String) -> String { mediaSourceId ?? itemId }
}
