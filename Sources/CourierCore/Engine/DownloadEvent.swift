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

/// Why a download's run ended: carried by the one final event, ``DownloadEvent/ended(id:_:)``.
public enum DownloadEnd: Sendable, Equatable {
    /// The final file is in place and verified.
    case completed(DownloadRecord)
    /// The download failed for good; the record keeps the error (and the partial, unless
    /// it failed an integrity check).
    case failed(CourierError)
    /// Cancelled: its partial file and record are gone.
    case cancelled
    /// Paused, keeping its bytes: by a call, another process, or the engine itself (a full
    /// disk), then with the reason.
    case paused(CourierError?)
    /// Another process (or downloader) holds its lease and runs it; ``CourierError/Code/leased``.
    case leftToAnotherProcess(CourierError)
    /// The downloader shut down; the download is queued and resumes at the next start.
    case shutDown

    /// The completed record, or the end as an error: what ``Downloader/waitForCompletion(id:)``
    /// returns or throws.
    public func completedRecord(id: String) throws -> DownloadRecord {
        switch self {
        case let .completed(record): return record
        case let .failed(error): throw error
        case .cancelled: throw CourierError(.cancelled, "download \(id) was cancelled")
        case let .paused(error):
            throw error.map { CourierError(.paused, "download \(id) paused: \($0.description)") } ?? CourierError(.paused, "download \(id) was paused")
        case let .leftToAnotherProcess(error): throw error
        case .shutDown: throw CourierError(.cancelled, "the downloader shut down before download \(id) finished")
        }
    }
}

/// Something that happened to a download. A per-download stream always ends with exactly one
/// ``ended(id:_:)``, also for a subscriber that arrives after the end, and nothing else ends it.
public enum DownloadEvent: Sendable, Equatable {
    /// Bytes arrived (throttled to about ten a second), or the persisted progress for a
    /// new subscriber.
    case progress(DownloadProgress)
    /// The download was queued or started running (the ends are ``ended(id:_:)``).
    case stateChanged(id: String, state: DownloadState, error: CourierError?)
    /// An attempt failed with a passing error; the next starts after `delay`. `attempt`
    /// counts the failures in a row, `limit` is where the download gives up.
    case retrying(id: String, attempt: Int, limit: Int, error: CourierError, delay: Duration)
    /// The run ended, and why. Final.
    case ended(id: String, DownloadEnd)

    /// The download the event is about.
    public var id: String {
        switch self {
        case let .progress(p): return p.id
        case let .stateChanged(id, _, _): return id
        case let .retrying(id, _, _, _, _): return id
        case let .ended(id, _): return id
        }
    }

    /// Why the download ended, for the final event; `nil` for every other.
    public var end: DownloadEnd? {
        if case let .ended(_, end) = self { return end }
        return nil
    }

    /// Whether this event ends the download's stream.
    public var isFinal: Bool { end != nil }
}
