import Foundation

/// Pure rules that turn what a server says about a file into a file extension.
public enum MediaFileTypes {
    /// The extension a media reply's MIME type calls for (seed 003: "determined from the
    /// HTTP response MIME type, or defaults to the container"); `nil` when the type names no
    /// media format (absent, `application/octet-stream`, anything unknown). Parameters and
    /// case are ignored.
    public static func mediaExtension(contentType: String?) -> String? {
        essence(contentType).flatMap { mediaTypes[$0] }
    }

    static let mediaTypes: [String: String] = [
        "video/mp4": "mp4", "video/x-matroska": "mkv", "video/webm": "webm", "video/quicktime": "mov", "video/x-m4v": "m4v",
        "video/mp2t": "ts", "video/x-msvideo": "avi", "video/avi": "avi", "video/ogg": "ogv",
        "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/flac": "flac", "audio/x-flac": "flac",
        "audio/aac": "aac", "audio/ogg": "ogg", "audio/webm": "webm",
    ]

    /// A MIME type without its parameters, lower-cased (`Video/MP4; codecs=…` → `video/mp4`).
    static func essence(_ contentType: String?) -> String? {
        contentType?.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// The extension a media file ends up with: the MIME type's, else the container's.
    public static func mediaExtension(contentType: String?, container: String) -> String {
        mediaExtension(contentType: contentType) ?? container.lowercased()
    }

    /// Whether a reply's MIME type says it is a page, not media: HTML, JSON, XML or plain
    /// text (what a server's error page answered with 200 carries).
    public static func isPage(contentType: String?) -> Bool {
        guard let type = essence(contentType) else { return false }
        return type == "text/html" || type == "application/xhtml+xml" || type == "application/json" || type.hasSuffix("+json")
            || type == "text/plain" || type == "application/problem+json" || type == "text/xml" || type == "application/xml"
    }

    /// The file format a subtitle stream downloads as, from its codec: `subrip`/`srt` →
    /// `srt`, `webvtt`/`vtt` → `vtt`, `ass`, `ssa`; anything else (image-based subtitles
    /// such as PGS cannot become text) → `nil`.
    public static func subtitleFormat(codec: String?) -> String? {
        switch codec?.lowercased() {
        case "subrip", "srt": return "srt"
        case "webvtt", "vtt": return "vtt"
        case "ass": return "ass"
        case "ssa": return "ssa"
        default: return nil
        }
    }
}
