import Foundation

extension MediaItem {
    /// One downloadable version (Jellyfin's `MediaSourceInfo`); fields not modelled are kept
    /// in ``extraFields``.
    public struct MediaSource: Codable, Sendable, Equatable {
        /// The media source id (the version id).
        public var id: String
        /// The container: `mp4`, `mkv`, …
        public var container: String?
        /// The size in bytes, when the server says.
        public var size: Int64?
        /// The video, audio and subtitle streams.
        public var mediaStreams: [MediaStream]?
        /// Every field Courier does not model, exactly as sent.
        public var extraFields: [String: JSONValue] = [:]

        /// The subtitle streams a download can fetch as files (external ones, and those the
        /// server can extract: every `Subtitle` stream of a source is offered by Jellyfin).
        public var subtitleStreams: [MediaStream] { (mediaStreams ?? []).filter { $0.type == "Subtitle" } }

        /// Makes a source.
        public init(id: String, container: String?, size: Int64? = nil, mediaStreams: [MediaStream]? = nil) {
            self.id = id; self.container = container; self.size = size; self.mediaStreams = mediaStreams
        }

        static let modelled: Set<String> = ["Id", "Container", "Size", "MediaStreams"]

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: AnyKey.self)
            id = try c.decode(String.self, forKey: "Id")
            container = try c.decodeIfPresent(String.self, forKey: "Container")
            size = try c.decodeIfPresent(Int64.self, forKey: "Size")
            mediaStreams = try c.decodeIfPresent([MediaStream].self, forKey: "MediaStreams")
            extraFields = try c.extraFields(besides: Self.modelled)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: AnyKey.self)
            try c.encode(extraFields: extraFields)
            try c.encode(id, forKey: "Id")
            try c.encodeIfPresent(container, forKey: "Container")
            try c.encodeIfPresent(size, forKey: "Size")
            try c.encodeIfPresent(mediaStreams, forKey: "MediaStreams")
        }
    }

    /// One stream of a media source (Jellyfin's `MediaStream`); fields not modelled are kept
    /// in ``extraFields``.
    public struct MediaStream: Codable, Sendable, Equatable {
        /// The stream's index in its source: what a subtitle download names.
        public var index: Int
        /// `Video`, `Audio`, `Subtitle`.
        public var type: String
        /// The codec: for subtitles `subrip`, `srt`, `webvtt`, `ass`, `ssa`.
        public var codec: String?
        /// The language (ISO 639-2, `eng`).
        public var language: String?
        /// How a player names it.
        public var displayTitle: String?
        /// Whether it is a file beside the media rather than inside it.
        public var isExternal: Bool?
        /// Every field Courier does not model, exactly as sent.
        public var extraFields: [String: JSONValue] = [:]

        /// Makes a stream.
        public init(index: Int, type: String, codec: String? = nil, language: String? = nil, displayTitle: String? = nil, isExternal: Bool? = nil) {
            self.index = index; self.type = type; self.codec = codec; self.language = language; self.displayTitle = displayTitle; self.isExternal = isExternal
        }

        static let modelled: Set<String> = ["Index", "Type", "Codec", "Language", "DisplayTitle", "IsExternal"]

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: AnyKey.self)
            index = try c.decode(Int.self, forKey: "Index")
            type = try c.decode(String.self, forKey: "Type")
            codec = try c.decodeIfPresent(String.self, forKey: "Codec")
            language = try c.decodeIfPresent(String.self, forKey: "Language")
            displayTitle = try c.decodeIfPresent(String.self, forKey: "DisplayTitle")
            isExternal = try c.decodeIfPresent(Bool.self, forKey: "IsExternal")
            extraFields = try c.extraFields(besides: Self.modelled)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: AnyKey.self)
            try c.encode(extraFields: extraFields)
            try c.encode(index, forKey: "Index")
            try c.encode(type, forKey: "Type")
            try c.encodeIfPresent(codec, forKey: "Codec")
            try c.encodeIfPresent(language, forKey: "Language")
            try c.encodeIfPresent(displayTitle, forKey: "DisplayTitle")
            try c.encodeIfPresent(isExternal, forKey: "IsExternal")
        }
    }
}
