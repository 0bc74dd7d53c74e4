import Foundation

/// A Jellyfin `BaseItemDto`: the fields the library uses by name (as Jellyfin sends them),
/// and every other field the server sent in ``extraFields``, so `metadata.json` keeps the
/// whole item (overview, people, chapters, streams…) for an app that is offline.
public struct MediaItem: Codable, Sendable, Equatable {
    /// The item's `Type` as the server sent it: `Movie`, `Episode`, `Series`, `Season`, or
    /// any other (`BoxSet`, `Video`…), kept as it is rather than failing the whole item.
    public struct Kind: RawRepresentable, Codable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws { var c = encoder.singleValueContainer(); try c.encode(rawValue) }
        /// A film.
        public static let movie = Self(rawValue: "Movie")
        /// An episode of a season.
        public static let episode = Self(rawValue: "Episode")
        /// A series, holding seasons.
        public static let series = Self(rawValue: "Series")
        /// A season, holding episodes.
        public static let season = Self(rawValue: "Season")
    }

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
    /// The summary shown on a detail page.
    public var overview: String?
    /// The running time in ticks of 100 ns (Jellyfin's unit).
    public var runTimeTicks: Int64?
    /// Genres.
    public var genres: [String]?
    /// The year of release.
    public var productionYear: Int?
    /// Every field of the server's item that Courier does not model, exactly as sent (and
    /// modelled ones the server sent as `null`, so they are written back as `null`).
    public var extraFields: [String: JSONValue] = [:]

    /// The running time in seconds, when the server said.
    public var runTime: TimeInterval? { runTimeTicks.map { Double($0) / 10_000_000 } }

    /// A field of the server's item that Courier does not model (`People`, `Chapters`…).
    public subscript(field name: String) -> JSONValue? { extraFields[name] }

    static let modelled: Set<String> = ["Id", "Type", "Name", "SeriesId", "SeriesName", "SeasonId", "ParentIndexNumber", "IndexNumber", "MediaSources",
                                        "ImageTags", "BackdropImageTags", "Overview", "RunTimeTicks", "Genres", "ProductionYear"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        id = try c.decode(String.self, forKey: "Id")
        type = try c.decode(Kind.self, forKey: "Type")
        name = try c.decodeIfPresent(String.self, forKey: "Name")
        seriesId = try c.decodeIfPresent(String.self, forKey: "SeriesId")
        seriesName = try c.decodeIfPresent(String.self, forKey: "SeriesName")
        seasonId = try c.decodeIfPresent(String.self, forKey: "SeasonId")
        parentIndexNumber = try c.decodeIfPresent(Int.self, forKey: "ParentIndexNumber")
        indexNumber = try c.decodeIfPresent(Int.self, forKey: "IndexNumber")
        mediaSources = try c.decodeIfPresent([MediaSource].self, forKey: "MediaSources")
        imageTags = try c.decodeIfPresent([String: String].self, forKey: "ImageTags")
        backdropImageTags = try c.decodeIfPresent([String].self, forKey: "BackdropImageTags")
        overview = try c.decodeIfPresent(String.self, forKey: "Overview")
        runTimeTicks = try c.decodeIfPresent(Int64.self, forKey: "RunTimeTicks")
        genres = try c.decodeIfPresent([String].self, forKey: "Genres")
        productionYear = try c.decodeIfPresent(Int.self, forKey: "ProductionYear")
        extraFields = try c.extraFields(besides: Self.modelled)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyKey.self)
        try c.encode(extraFields: extraFields)
        try c.encode(id, forKey: "Id")
        try c.encode(type, forKey: "Type")
        try c.encodeIfPresent(name, forKey: "Name")
        try c.encodeIfPresent(seriesId, forKey: "SeriesId")
        try c.encodeIfPresent(seriesName, forKey: "SeriesName")
        try c.encodeIfPresent(seasonId, forKey: "SeasonId")
        try c.encodeIfPresent(parentIndexNumber, forKey: "ParentIndexNumber")
        try c.encodeIfPresent(indexNumber, forKey: "IndexNumber")
        try c.encodeIfPresent(mediaSources, forKey: "MediaSources")
        try c.encodeIfPresent(imageTags, forKey: "ImageTags")
        try c.encodeIfPresent(backdropImageTags, forKey: "BackdropImageTags")
        try c.encodeIfPresent(overview, forKey: "Overview")
        try c.encodeIfPresent(runTimeTicks, forKey: "RunTimeTicks")
        try c.encodeIfPresent(genres, forKey: "Genres")
        try c.encodeIfPresent(productionYear, forKey: "ProductionYear")
    }

    /// Makes an item.
    public init(id: String, type: Kind, name: String? = nil, seriesId: String? = nil, seriesName: String? = nil, seasonId: String? = nil,
                parentIndexNumber: Int? = nil, indexNumber: Int? = nil, mediaSources: [MediaSource]? = nil) {
        self.id = id; self.type = type; self.name = name; self.seriesId = seriesId; self.seriesName = seriesName; self.seasonId = seasonId
        self.parentIndexNumber = parentIndexNumber; self.indexNumber = indexNumber; self.mediaSources = mediaSources
    }
}
