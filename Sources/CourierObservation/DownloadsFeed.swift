import CourierCore
import Foundation

/// The engine's events as updates a screen can afford: seeded at once from the stored
/// records (a relaunched app shows each bar where it was before any byte arrives), then
/// coalesced to at most `maxUpdatesPerSecond` updates (10 by default), each carrying every
/// download of the selection and the ones that changed. ``DownloadList``, its
/// `ObservableObject` counterpart, the Combine publishers and `Downloader.progress(for:maxUpdatesPerSecond:)`
/// are built on it; use it directly for any other UI.
public final class DownloadsFeed: Sendable {
    /// One update.
    public struct Update: Sendable, Equatable {
        /// Every download of the selection, in the order they were asked for.
        public var all: [DownloadSnapshot]
        /// The ones that changed since the previous update (all of them in the first).
        public var changed: [DownloadSnapshot]
        /// Ids that left (cancelled, so their records are gone).
        public var removed: [String]
        /// Whether this is the first update, from the stored records.
        public var isInitial: Bool
    }

    private let downloader: Downloader
    private let selection: DownloadSelection
    private let interval: Duration
    private let task = Locked<Task<Void, Never>?>(nil)

    /// Makes a feed; nothing happens until ``start(_:)``.
    public init(downloader: Downloader, selection: DownloadSelection = .all, maxUpdatesPerSecond: Double = 10) {
        self.downloader = downloader
        self.selection = selection
        self.interval = .milliseconds(Int64(1000 / max(0.1, min(maxUpdatesPerSecond, 1000))))
    }

    /// Starts following (once; a second call does nothing): the first update comes from the
    /// stored records, at once.
    /// - Parameter deliver: called with each update, one at a time, off the main actor (hop
    ///   there yourself); return `false` to stop the feed (its owner is gone).
    public func start(_ deliver: @escaping @Sendable (Update) async -> Bool) {
        task.withLock { running in
            guard running == nil else { return }
            running = Task { [downloader, selection, interval] in
                await Self.follow(downloader, selection, interval, deliver)
            }
        }
    }

    /// Starts following for an owner on the main actor (a list, a view model): `apply` runs
    /// there with each update while the owner lives; the feed stops once it is gone.
    public func start<Owner: AnyObject & Sendable>(for owner: Owner, _ apply: @escaping @MainActor (Owner, Update) -> Void) {
        start { [weak owner] update in
            await MainActor.run { () -> Bool in
                guard let owner else { return false }
                apply(owner, update)
                return true
            }
        }
    }

    /// Stops following. A feed also stops when `deliver` returns `false` and when the
    /// downloader shuts down; releasing the feed does not stop it.
    public func stop() {
        task.withLock { $0?.cancel(); $0 = nil }
    }

    private static func follow(_ downloader: Downloader, _ selection: DownloadSelection, _ interval: Duration,
                               _ deliver: @escaping @Sendable (Update) async -> Bool) async {
        let events = downloader.events()   // first, so nothing between the read and the stream is missed
        let state = Locked(FeedState(selection: selection))
        let records = (try? await downloader.database.allRecords()) ?? []   // unreadable: live events still come
        let first = state.withLock { s in s.load(records); return s.flush(initial: true)! }
        guard await deliver(first) else { return }
        let (kicks, kick) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    if state.withLock({ $0.apply(event) }) == .needsRecord,
                       let record = try? await downloader.record(id: event.id) {   // unreadable: skipped; its next event asks again
                        state.withLock { s in if s.insert(record) { _ = s.apply(event) } }
                    }
                    kick.yield()
                }
                kick.finish()
            }
            group.addTask {
                for await _ in kicks {
                    if let update = state.withLock({ $0.flush() }), !(await deliver(update)) { break }
                    try? await Task.sleep(for: interval)   // at most one update per interval
                }
            }
            await group.next()   // either ends (shutdown, or the owner is gone): stop the other
            group.cancelAll()
            kick.finish()
        }
    }
}
