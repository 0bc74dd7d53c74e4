import CourierCore
import Foundation
import Observation

/// The downloads a SwiftUI screen shows, observable (`@Observable`): seeded from the
/// database at once, then updated from the engine's events at most `maxUpdatesPerSecond`
/// times a second per download. Each row observes its own ``DownloadItem``, so a byte
/// arriving for one download redraws that row only; ``items`` changes when a download
/// joins or leaves the list.
///
/// ```swift
/// struct DownloadsView: View {
///     let list: DownloadList        // DownloadList(downloader: downloader), made once
///     var body: some View {
///         List(list.items) { item in
///             ProgressView(value: item.fractionCompleted ?? 0)
///         }
///     }
/// }
/// ```
///
/// On iOS 16 use `DownloadListObject`, its `ObservableObject` counterpart.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor @Observable
public final class DownloadList {
    /// The downloads, in the order they were asked for.
    public private(set) var items: [DownloadItem] = []
    /// Whether the stored records have been read (until then ``items`` is empty).
    public private(set) var isLoaded = false
    /// The downloader the items belong to.
    @ObservationIgnored public let downloader: Downloader
    @ObservationIgnored private var byID: [String: DownloadItem] = [:]
    @ObservationIgnored private let feed: DownloadsFeed

    /// Starts following `downloader`'s downloads of `selection`.
    public init(downloader: Downloader, selection: DownloadSelection = .all, maxUpdatesPerSecond: Double = 10) {
        self.downloader = downloader
        feed = DownloadsFeed(downloader: downloader, selection: selection, maxUpdatesPerSecond: maxUpdatesPerSecond)
        feed.start(for: self) { list, update in list.take(update) }
    }

    deinit { feed.stop() }

    /// The download with this id, if the list holds it.
    public func item(id: String) -> DownloadItem? { byID[id] }

    /// Several of the list's downloads as one bar: a media item's versions, a batch.
    public func group(_ selection: DownloadSelection) -> DownloadGroup { DownloadGroup(list: self, selection: selection) }

    /// The whole list as one bar.
    public var progress: GroupProgress { GroupProgress(items.map(\.snapshot)) }

    /// Stops following the engine (also when the list is released).
    public func stop() { feed.stop() }

    private func take(_ update: DownloadsFeed.Update) {
        var joined = false
        for snapshot in update.changed {
            if let item = byID[snapshot.id] {
                if item.snapshot != snapshot { item.snapshot = snapshot }
            } else {
                byID[snapshot.id] = DownloadItem(snapshot: snapshot, downloader: downloader)
                joined = true
            }
        }
        for id in update.removed { byID[id]?.snapshot.phase = .cancelled; byID[id] = nil }
        if joined || !update.removed.isEmpty { items = update.all.compactMap { byID[$0.id] } }
        if !isLoaded { isLoaded = true }
    }
}

/// One download of a ``DownloadList``, observable: a row view reads it and redraws when
/// its download changes (at most the list's `maxUpdatesPerSecond` times a second).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor @Observable
public final class DownloadItem: Identifiable {
    /// The download's id.
    public nonisolated let id: String
    /// Where it stands: every other property reads it.
    public internal(set) var snapshot: DownloadSnapshot
    @ObservationIgnored private let downloader: Downloader

    init(snapshot: DownloadSnapshot, downloader: Downloader) {
        self.id = snapshot.id
        self.snapshot = snapshot
        self.downloader = downloader
    }

    /// Where the download stands (``DownloadSnapshot/phase``).
    public var phase: DownloadSnapshot.Phase { snapshot.phase }
    /// Bytes held so far.
    public var bytesReceived: Int64 { snapshot.bytesReceived }
    /// The whole size, when known.
    public var totalBytes: Int64? { snapshot.totalBytes }
    /// From 0 to 1, when the size is known.
    public var fractionCompleted: Double? { snapshot.fractionCompleted }
    /// Current speed, bytes per second (0 while nothing arrives).
    public var bytesPerSecond: Double { snapshot.bytesPerSecond }
    /// Seconds left at the current speed, when it can be told.
    public var secondsRemaining: Double? { snapshot.secondsRemaining }
    /// Why it failed, paused or retries; `nil` otherwise.
    public var error: CourierError? { snapshot.error }

    /// Pauses it, keeping its bytes.
    public func pause() async throws { try await downloader.pause(id: id) }
    /// Resumes it from its bytes (a failed one too).
    public func resume() async throws { try await downloader.resume(id: id) }
    /// Cancels it: its bytes and record go (a completed file stays).
    public func cancel() async throws { try await downloader.cancel(id: id) }
}

/// Several downloads of a ``DownloadList`` as one: computed from the list's items each time
/// it is read, so a view that reads it follows them.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
public struct DownloadGroup {
    let list: DownloadList
    /// Which downloads it covers.
    public let selection: DownloadSelection

    /// Its downloads, in the list's order.
    public var items: [DownloadItem] {
        list.items.filter { selection.contains(id: $0.id, mediaId: $0.snapshot.mediaId) }
    }
    /// Its bytes, speed and time left.
    public var progress: GroupProgress { GroupProgress(items.map(\.snapshot)) }

    /// Pauses each of its running or queued downloads.
    /// (One cancelled meanwhile, here or by another process, needs no pause: the rest go on.)
    public func pause() async throws {
        for item in items where item.snapshot.isActive {
            do { try await item.pause() } catch let error as CourierError where error.code == .notFound { continue }
        }
    }
    /// Resumes each of its paused or failed downloads.
    public func resume() async throws {
        for item in items where item.phase == .paused || item.phase == .failed { try await item.resume() }
    }
    /// Cancels each of its downloads that has not completed.
    public func cancel() async throws { for item in items where item.phase != .completed { try await item.cancel() } }
}
