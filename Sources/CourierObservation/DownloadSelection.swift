import CourierCore

/// Which downloads a list, a group or a publisher covers.
public enum DownloadSelection: Sendable, Hashable {
    /// Every download of the downloader.
    case all
    /// Downloads whose id starts with a prefix (`"media:"`: the media library's).
    case idPrefix(String)
    /// These downloads (a batch).
    case ids(Set<String>)
    /// The downloads of one media item (its versions, subtitles and images).
    case mediaId(String)

    /// Whether the download `id`, with `mediaId`, belongs to the selection.
    public func contains(id: String, mediaId: String?) -> Bool {
        switch self {
        case .all: return true
        case let .idPrefix(prefix): return id.hasPrefix(prefix)
        case let .ids(ids): return ids.contains(id)
        case let .mediaId(wanted): return mediaId == wanted
        }
    }

    /// Whether a download can be told in or out by its id alone.
    var needsRecord: Bool { if case .mediaId = self { return true } else { return false } }
}
