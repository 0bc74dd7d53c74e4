import Foundation

/// A download's progress at one moment.
public struct DownloadProgress: Sendable, Equatable {
    /// The download's id.
    public var id: String
    /// Bytes held so far.
    public var bytesReceived: Int64
    /// The complete size, when known.
    public var totalBytes: Int64?
    /// Current speed, bytes per second (0 when unknown or idle).
    public var bytesPerSecond: Double
    /// Seconds left at the current speed, when it can be told.
    public var secondsRemaining: Double?

    /// Makes a progress value.
    public init(id: String, bytesReceived: Int64, totalBytes: Int64?, bytesPerSecond: Double = 0, secondsRemaining: Double? = nil) {
        self.id = id
        self.bytesReceived = bytesReceived
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.secondsRemaining = secondsRemaining
    }

    /// 0…1 when the total is known.
    public var fractionCompleted: Double? {
        guard let totalBytes, totalBytes > 0 else { return totalBytes == 0 ? 1 : nil }
        return min(1, Double(bytesReceived) / Double(totalBytes))
    }
}

/// Something that happened to a download. A per-download stream always ends with one of
/// the final events (``completed(_:)``, ``failed(id:error:)``, ``cancelled(id:)``), also for
/// a subscriber that arrives after the end.
public enum DownloadEvent: Sendable, Equatable {
    /// Bytes arrived (throttled to about ten a second), or the persisted progress for a
    /// new subscriber.
    case progress(DownloadProgress)
    /// The download entered a state; `error` says why when it paused on an error.
    case stateChanged(id: String, state: DownloadState, error: CourierError?)
    /// The final file is in place and verified. Final.
    case completed(DownloadRecord)
    /// The download failed for good. Final.
    case failed(id: String, error: CourierError)
    /// The download was cancelled; its partial file and record are gone. Final.
    case cancelled(id: String)
    /// An attempt failed with a passing error; the next starts after `delay`. `attempt`
    /// counts the failures in a row, `limit` is where the download gives up.
    case retrying(id: String, attempt: Int, limit: Int, error: CourierError, delay: Duration)

    /// The download the event is about.
    public var id: String {
        switch self {
        case let .progress(p): return p.id
        case let .stateChanged(id, _, _): return id
        case let .completed(r): return r.id
        case let .failed(id, _): return id
        case let .cancelled(id): return id
        case let .retrying(id, _, _, _, _): return id
        }
    }

    /// Whether this event ends the download's stream.
    public var isFinal: Bool {
        switch self {
        case .completed, .failed, .cancelled: return true
        default: return false
        }
    }
}
