#if canImport(Combine) || COURIER_DARWIN_TYPECHECK
#if COURIER_DARWIN_TYPECHECK
@preconcurrency import OpenCombine   // mirrors Combine's API: scripts/darwin-typecheck checks this file against it
import CourierObservation
#else
@preconcurrency import Combine   // the subject is sent to from the feed's task (Combine's subjects are used so across threads; Apple does not document it)
#endif
import CourierCore

// Darwin-only (Combine): publishers over `DownloadsFeed` (portable, tested on Linux).
extension Downloader {
    /// The downloads of `selection`, from the stored records on, at most
    /// `maxUpdatesPerSecond` times a second, the newest kept while a subscriber has no demand.
    /// Values arrive off the main thread: a `sink` in main-actor code must come after
    /// `.receive(on: DispatchQueue.main)` (Swift 6 checks it at run time). It never finishes;
    /// cancel it.
    public nonisolated func publisher(for selection: DownloadSelection = .all, maxUpdatesPerSecond: Double = 10) -> AnyPublisher<[DownloadSnapshot], Never> {
        Deferred { () -> AnyPublisher<[DownloadSnapshot], Never> in
            let subject = PassthroughSubject<[DownloadSnapshot], Never>()
            let feed = DownloadsFeed(downloader: self, selection: selection, maxUpdatesPerSecond: maxUpdatesPerSecond)
            return subject
                .buffer(size: 1, prefetch: .byRequest, whenFull: .dropOldest)   // a subject drops values without demand
                .handleEvents(receiveSubscription: { _ in feed.start { subject.send($0.all); return true } },
                              receiveCancel: { feed.stop() })
                .eraseToAnyPublisher()
        }
        .eraseToAnyPublisher()
    }

    /// Download `id`, from its stored record on (`nil` while there is no such download, and
    /// once it is cancelled), at most `maxUpdatesPerSecond` times a second; as above.
    public nonisolated func publisher(for id: String, maxUpdatesPerSecond: Double = 10) -> AnyPublisher<DownloadSnapshot?, Never> {
        publisher(for: .ids([id]), maxUpdatesPerSecond: maxUpdatesPerSecond).map(\.first).removeDuplicates().eraseToAnyPublisher()
    }
}
#endif
