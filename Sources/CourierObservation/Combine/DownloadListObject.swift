#if canImport(Combine) || COURIER_DARWIN_TYPECHECK
#if COURIER_DARWIN_TYPECHECK
import OpenCombine   // mirrors Combine's API: scripts/darwin-typecheck checks this file against it
import CourierObservation
#else
import Combine
#endif
import CourierCore

// Darwin-only (Combine): the iOS 16 counterpart of `DownloadList`. Everything it shows comes
// from `DownloadsFeed` (portable, tested on Linux); this only publishes it.

/// The downloads a SwiftUI screen shows on iOS 16 (`ObservableObject`; on iOS 17 and later
/// `DownloadList` redraws only the row that changed): seeded from the database at once,
/// updated at most `maxUpdatesPerSecond` times a second. Keep it in a `@StateObject`.
@MainActor
public final class DownloadListObject: ObservableObject {
    /// The downloads, in the order they were asked for.
    @Published public private(set) var items: [DownloadSnapshot] = []
    /// Whether the stored records have been read.
    @Published public private(set) var isLoaded = false
    /// The downloader the items belong to (pause, resume, cancel through it).
    public let downloader: Downloader
    private let feed: DownloadsFeed

    /// Starts following `downloader`'s downloads of `selection`.
    public init(downloader: Downloader, selection: DownloadSelection = .all, maxUpdatesPerSecond: Double = 10) {
        self.downloader = downloader
        feed = DownloadsFeed(downloader: downloader, selection: selection, maxUpdatesPerSecond: maxUpdatesPerSecond)
        feed.start(for: self) { list, update in
            list.items = update.all
            if !list.isLoaded { list.isLoaded = true }
        }
    }

    deinit { feed.stop() }

    /// The download with this id, if the list holds it.
    public func snapshot(id: String) -> DownloadSnapshot? { items.first { $0.id == id } }

    /// Several of its downloads as one bar: a media item's versions, a batch.
    public func progress(of selection: DownloadSelection) -> GroupProgress {
        GroupProgress(items.filter { selection.contains(id: $0.id, mediaId: $0.mediaId) })
    }
}
#endif
