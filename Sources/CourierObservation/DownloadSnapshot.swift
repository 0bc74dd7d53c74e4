import CourierCore
import Foundation

/// One download as a screen shows it: where it stands, its bytes, speed and time left.
/// A value: ``DownloadList``, the Combine publishers and `Downloader.progress(for:maxUpdatesPerSecond:)`
/// all build on it, and ``apply(_:)`` is the one rule that turns the engine's events into it.
public struct DownloadSnapshot: Sendable, Equatable, Identifiable {
    /// Where the download stands, as a screen tells it.
    public enum Phase: Sendable, Equatable {
        /// Waiting for a free slot (or for the next launch).
        case queued
        /// Bytes are arriving.
        case downloading
        /// An attempt failed with a passing error; another follows (`attempt` of `limit`).
        case retrying(attempt: Int, limit: Int)
        /// The system fetches the rest while the app is away (a background transfer).
        case handedOff
        /// Another process (an extension, the app's other copy) holds it and runs it.
        case runningElsewhere
        /// Stopped, keeping its bytes; ``DownloadSnapshot/error`` says why when the engine paused it.
        case paused
        /// The file is in place and verified.
        case completed
        /// Stopped for good; ``DownloadSnapshot/error`` says why.
        case failed
        /// Cancelled: its bytes and record are gone.
        case cancelled
    }

    /// The download's id.
    public let id: String
    /// Where the download stands, in the terms a list row shows.
    public var phase: Phase
    /// Bytes held so far.
    public var bytesReceived: Int64
    /// The whole size, when known.
    public var totalBytes: Int64?
    /// Current speed, bytes per second (0 while nothing arrives).
    public var bytesPerSecond: Double
    /// Seconds left at the current speed, when it can be told.
    public var secondsRemaining: Double?
    /// Why it failed, paused or retries; `nil` otherwise.
    public var error: CourierError?
    /// The final file's path, relative to the downloader's root directory.
    public var destination: String
    /// The caller's groups (a media item's versions share a `mediaId`).
    public var mediaId: String?
    /// The caller's kind of media (`video`, `audio`, …), as the request gave it.
    public var mediaType: String?
    /// When it was first asked for: the list's order.
    public var createdAt: Date

    /// The snapshot of a stored record: what a relaunched app shows before any byte arrives.
    public init(record: DownloadRecord) {
        id = record.id
        switch record.state {
        case .queued, .downloading: phase = .queued   // nothing runs it until the engine says so
        case .handedOff: phase = .handedOff
        case .paused: phase = .paused
        case .completed: phase = .completed
        case .failed: phase = .failed
        }
        bytesReceived = record.bytesReceived
        totalBytes = record.totalBytes ?? record.expectedBytes
        bytesPerSecond = 0
        secondsRemaining = nil
        error = record.state == .completed ? nil : record.lastError
        destination = record.localFinalPath
        mediaId = record.mediaId
        mediaType = record.mediaType
        createdAt = record.createdAt
    }

    /// 0…1 when the size is known.
    public var fractionCompleted: Double? {
        if phase == .completed { return 1 }
        guard let totalBytes else { return nil }
        return totalBytes > 0 ? min(1, Double(bytesReceived) / Double(totalBytes)) : 1
    }

    /// Whether bytes may still arrive without anyone asking (queued, running, retrying,
    /// handed off, run by another process).
    public var isActive: Bool {
        switch phase {
        case .queued, .downloading, .retrying, .handedOff, .runningElsewhere: return true
        case .paused, .completed, .failed, .cancelled: return false
        }
    }

    /// Takes in one of the engine's events about this download.
    public mutating func apply(_ event: DownloadEvent) {
        guard event.id == id else { return }
        switch event {
        case let .progress(p):
            bytesReceived = p.bytesReceived
            totalBytes = p.totalBytes ?? totalBytes
            bytesPerSecond = p.bytesPerSecond
            secondsRemaining = p.secondsRemaining
        case let .stateChanged(_, state, error):
            switch state {
            case .queued: phase = .queued
            case .downloading: phase = .downloading
            case .handedOff: phase = .handedOff
            case .paused: phase = .paused
            case .failed: phase = .failed
            case .completed: phase = .completed
            }
            self.error = error
            if state != .downloading { stopClock() }
        case let .retrying(_, attempt, limit, error, _):
            phase = .retrying(attempt: attempt, limit: limit)
            self.error = error
            stopClock()
        case let .ended(_, end):
            stopClock()
            switch end {
            case let .completed(record):
                phase = .completed
                bytesReceived = record.bytesReceived
                totalBytes = record.totalBytes ?? record.bytesReceived
                destination = record.localFinalPath
                error = nil
            case let .failed(e): phase = .failed; error = e
            case .cancelled: phase = .cancelled; bytesReceived = 0; error = nil
            case let .paused(e): phase = .paused; error = e
            case let .leftToAnotherProcess(e): phase = .runningElsewhere; error = e
            case .shutDown: phase = .queued; error = nil
            }
        }
    }

    private mutating func stopClock() {
        bytesPerSecond = 0
        secondsRemaining = nil
    }
}
