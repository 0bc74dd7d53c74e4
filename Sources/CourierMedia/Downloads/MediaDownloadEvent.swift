import Courier
import Foundation

/// One version of one item: what the library downloads, follows and steers.
public struct MediaVersion: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The movie's or episode's id.
    public var itemId: String
    /// The version id: the media source id (else the item id), with a transcoded
    /// download's settings appended (``TranscodeOptions``).
    public var versionId: String
    /// Makes a key.
    public init(itemId: String, versionId: String) { self.itemId = itemId; self.versionId = versionId }
    public var description: String { "\(itemId)/\(versionId)" }
}

/// What happens to one version's download, for a progress bar and its buttons. A stream
/// of them (``MediaLibrary/events(for:)``) ends with exactly one final event:
/// ``completed(_:)``, ``failed(_:)``, ``paused(_:)`` or ``cancelled``.
public enum MediaDownloadEvent: Sendable, Equatable {
    /// Waiting for its turn (or started again).
    case queued
    /// Bytes arrived: received, total when known, speed and time left (about ten a second).
    case progress(DownloadProgress)
    /// An attempt failed with a passing error; the next starts after `delay`.
    case retrying(attempt: Int, limit: Int, error: CourierError, delay: Duration)
    /// The media file is whole; subtitles, metadata and images are being put in place.
    case finishing
    /// Done: the media file, its metadata, and what optional parts could be fetched.
    case completed(MediaDownloadReport)
    /// Failed with a code; what the engine kept (the partial file) stays for a resume,
    /// unless the file was no media (`E_NOT_MEDIA`), which leaves nothing.
    case failed(CourierError)
    /// Paused, keeping its bytes (by a call, another process, or a full disk: the reason).
    case paused(CourierError?)
    /// Cancelled: its partial file is gone.
    case cancelled

    /// What a final event means for a caller waiting on `version`: the report, or the end
    /// as an error (`E_PAUSED`, `E_CANCELLED`, or the failure); `nil` for every other event.
    public func result(for version: MediaVersion) throws -> MediaDownloadReport? {
        switch self {
        case let .completed(report): return report
        case let .failed(error): throw error
        case let .paused(error): throw error.map { CourierError(.paused, "\(version) paused: \($0.description)") } ?? CourierError(.paused, "\(version) was paused")
        case .cancelled: throw CourierError(.cancelled, "\(version) was cancelled")
        case .queued, .progress, .retrying, .finishing: return nil
        }
    }

    /// Whether the stream ends with this event.
    public var isFinal: Bool {
        switch self {
        case .completed, .failed, .paused, .cancelled: return true
        case .queued, .progress, .retrying, .finishing: return false
        }
    }
}

/// Where an unfinished download stands: a row of an app's downloads screen.
public struct MediaTransfer: Sendable, Equatable, Codable {
    /// Which item and version.
    public var version: MediaVersion
    /// The item's name, as the server sent it.
    public var name: String?
    /// `queued`, `downloading`, `paused`, `failed`, or `finishing` (the media is whole,
    /// the rest is being put in place, also after a relaunch).
    public var state: String
    /// Bytes held.
    public var bytesReceived: Int64
    /// The size, when known.
    public var totalBytes: Int64?
    /// Whether the server transcodes it.
    public var isTranscoded: Bool
    /// The error code of a failed or paused download, when it has one.
    public var errorCode: String?
    /// The error's message.
    public var errorMessage: String?

    /// 0…1 when the size is known.
    public var fractionCompleted: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return min(1, Double(bytesReceived) / Double(totalBytes))
    }
}

/// What a download of one version did.
public struct MediaDownloadReport: Sendable, Equatable, Codable {
    /// The media file, relative to the library root.
    public var mediaPath: String
    /// The version id.
    public var versionId: String
    /// Images that could not be fetched (they never fail the item).
    public var failedImages: [String]
    /// Subtitle files downloaded beside the media, relative to the library root.
    public var subtitlePaths: [String] = []
    /// Subtitle stream indexes that could not be fetched (they never fail the item).
    public var failedSubtitles: [Int] = []
}
