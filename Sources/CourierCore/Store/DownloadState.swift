/// Where a download stands. Stored as text in the `courierDownload` table.
public enum DownloadState: String, Codable, Sendable, CaseIterable {
    /// Waiting for a free slot.
    case queued
    /// A transfer is running (or was, when the process died: start-up resumes it).
    case downloading
    /// Stopped on purpose (pause, Ctrl-C, no space); the partial is kept.
    case paused
    /// Stopped for good with an error code; the record says why.
    case failed
    /// The final file is in place and verified.
    case completed
    /// The rest is being fetched by the system (a background URLSession download task)
    /// while the app is suspended: the engine leaves it alone until the hand-off's result
    /// is adopted or the hand-off is taken back (see `Downloader+HandOff.swift`).
    case handedOff

    /// Whether nothing more will happen without a new request.
    public var isTerminal: Bool { self == .failed || self == .completed }
}
