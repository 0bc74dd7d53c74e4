import Foundation

/// What a transcoded download asks of the server (the seed's `Static=false` URL): the
/// server re-encodes the version to these settings instead of sending the file as stored.
public struct TranscodeOptions: Codable, Sendable, Equatable, Hashable {
    /// The container to deliver: `mp4`, `mkv`, `ts`.
    public var container: String
    /// The video codec: `h264`, `hevc`.
    public var videoCodec: String
    /// The audio codec: `aac`, `ac3`.
    public var audioCodec: String
    /// The maximum total bitrate, bits per second.
    public var maxBitrate: Int

    /// Makes options.
    public init(container: String = "mp4", videoCodec: String = "h264", audioCodec: String = "aac", maxBitrate: Int = 4_000_000) {
        self.container = container; self.videoCodec = videoCodec; self.audioCodec = audioCodec; self.maxBitrate = maxBitrate
    }

    /// What a transcoded version adds to its version id, so it never takes the place of the
    /// static file of the same source, nor of another transcoding (every setting is in it,
    /// the bitrate exactly): `t-mp4-h264-aac-4000k`.
    var versionSuffix: String {
        let rate = maxBitrate % 1000 == 0 ? "\(maxBitrate / 1000)k" : "\(maxBitrate)"
        return "t-\(container)-\(videoCodec)-\(audioCodec)-\(rate)"
    }
}

/// Which subtitle streams to download beside the media.
public enum SubtitleChoice: Codable, Sendable, Equatable, Hashable {
    /// None (the default).
    case none
    /// Every subtitle stream of the version.
    case all
    /// The streams with these indexes (``MediaItem/MediaStream/index``).
    case indexes([Int])
}

/// How to download a version.
public struct MediaDownloadOptions: Codable, Sendable, Equatable, Hashable {
    /// `nil`: the file as stored (static); else transcoded by the server.
    public var transcoding: TranscodeOptions?
    /// Subtitles to fetch beside the media.
    public var subtitles: SubtitleChoice
    /// `false` (the default, seed 003): a version already in the library is downloaded
    /// again, and replaces its copy only once the new file is whole and valid. `true`: it is
    /// not downloaded again; only what it lacks (the subtitles asked for) is fetched beside
    /// it and added to its entry (the seed's subtitle job on its own).
    public var keepsMediaInLibrary: Bool

    /// Makes options.
    public init(transcoding: TranscodeOptions? = nil, subtitles: SubtitleChoice = .none, keepsMediaInLibrary: Bool = false) {
        self.transcoding = transcoding; self.subtitles = subtitles; self.keepsMediaInLibrary = keepsMediaInLibrary
    }

    private enum CodingKeys: String, CodingKey { case transcoding, subtitles, keepsMediaInLibrary }

    /// Decodes options (a job written before ``keepsMediaInLibrary`` existed has none: `false`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        transcoding = try c.decodeIfPresent(TranscodeOptions.self, forKey: .transcoding)
        subtitles = try c.decode(SubtitleChoice.self, forKey: .subtitles)
        keepsMediaInLibrary = try c.decodeIfPresent(Bool.self, forKey: .keepsMediaInLibrary) ?? false
    }
}
