import Courier
import Foundation

/// Where everything goes under `Downloads/` (seed 003), as paths relative to the library
/// root. Pure: every id that becomes a path component is validated first.
public enum MediaLayout {
    /// The top folder.
    public static let downloads = "Downloads"
    /// Appended to a media file's name while a version in the library downloads again: the
    /// new file replaces the copy only once whole and valid (never taken for media).
    static let incomingSuffix = ".incoming"

    /// An id or extension that becomes one path component: non-empty, at most 255 bytes, no
    /// `/`, `\`, NUL or control character, not `.` or `..`, no `..` inside.
    public static func component(_ value: String, _ what: String = "id") throws -> String {
        guard !value.isEmpty, value.utf8.count <= 255, value != ".", value != "..", !value.contains(".."),
              !value.unicodeScalars.contains(where: { $0 == "/" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F }) else {
            throw CourierError(.invalidPath, "the \(what) \(String(value.prefix(40)).debugDescription) cannot name a file or folder")
        }
        return value
    }

    /// `Downloads/<movieId>` for a movie, `Downloads/<seriesId>` for an episode.
    public static func itemFolder(_ item: MediaItem) throws -> String {
        switch item.type {
        case .movie: return "\(downloads)/\(try component(item.id))"
        case .episode, .season:
            guard let series = item.seriesId else { throw CourierError(.invalidArgument, "episode \(item.id) has no series id") }
            return "\(downloads)/\(try component(series, "series id"))"
        case .series: return "\(downloads)/\(try component(item.id))"
        default: throw CourierError(.invalidArgument, "\(item.id) is a \(item.type.rawValue): only movies, series and their episodes have a folder")
        }
    }

    /// `Season-01` for season 1.
    public static func seasonName(_ number: Int) -> String { String(format: "Season-%02d", max(0, number)) }

    /// `Downloads/<seriesId>/Season-XX` for an episode.
    public static func seasonFolder(_ episode: MediaItem) throws -> String {
        guard let number = episode.parentIndexNumber else { throw CourierError(.invalidArgument, "episode \(episode.id) has no season number") }
        return try itemFolder(episode) + "/" + seasonName(number)
    }

    /// The folder that holds an item's media files.
    public static func mediaFolder(_ item: MediaItem) throws -> String {
        item.type == .episode ? try seasonFolder(item) : try itemFolder(item)
    }

    /// `<itemId>-<versionId>.<ext>` in the item's media folder.
    public static func mediaFile(_ item: MediaItem, versionId: String, container: String) throws -> String {
        "\(try mediaFolder(item))/\(try component(item.id))-\(try component(versionId, "version id")).\(try component(container, "extension"))"
    }

    /// `<itemId>-<versionId>.<index>[.<language>].<format>` beside the media file: a
    /// subtitle goes with its version (removing the version removes it) and is never taken
    /// for media (its extension is no media extension).
    public static func subtitleFile(_ item: MediaItem, versionId: String, index: Int, language: String?, format: String) throws -> String {
        let lang = try language.flatMap { $0.isEmpty ? nil : try component($0, "language") }.map { ".\($0)" } ?? ""
        return "\(try mediaFolder(item))/\(try component(item.id))-\(try component(versionId, "version id")).\(index)\(lang).\(try component(format, "extension"))"
    }

    /// `metadata.json` at movie, series or season level.
    public static func metadataFile(folder: String) -> String { folder + "/metadata.json" }

    /// Image kinds.
    public enum ImageKind: String, Sendable, CaseIterable {
        /// The poster or cover (Jellyfin's `Primary`).
        case primary = "Primary"
        /// The wide background picture (Jellyfin's `Backdrop`).
        case backdrop = "Backdrop"
    }

    /// Where an image goes (seed 003's four contexts).
    public enum ImageContext: Sendable, Equatable {
        /// A movie's images, in its own folder.
        case movie(MediaItem)
        /// A series' images, in the series' folder.
        case series(id: String, folder: String)
        /// A season's images, in the season's folder.
        case season(id: String, folder: String)
        /// An episode's images, beside its file.
        case episode(MediaItem)
    }

    /// The image's path (without extension decisions: pass it).
    public static func image(_ context: ImageContext, _ kind: ImageKind, ext: String) throws -> String {
        let e = try component(ext, "extension")
        switch context {
        case let .movie(movie): return "\(try itemFolder(movie))/Images/\(kind.rawValue).\(e)"
        case let .series(id, folder): return "\(folder)/Images/Series-\(try component(id))-\(kind.rawValue).\(e)"
        case let .season(id, folder): return "\(folder)/Images/Season-\(try component(id))-\(kind.rawValue).\(e)"
        case let .episode(ep): return "\(try seasonFolder(ep))/Images/Episode-\(try component(ep.id))-\(kind.rawValue).\(e)"
        }
    }
}
