import Foundation
import Testing
@testable import CourierCore

/// The hub's seeding, event by event (no clock, no thread): what a new subscriber of one
/// download gets when events were published between its subscription and its snapshot.
struct EventHubTests {
    static func progress(_ bytes: Int64) -> DownloadEvent {
        .progress(DownloadProgress(id: "x", bytesReceived: bytes, totalBytes: 1000))
    }

    static func bytes(_ events: [DownloadEvent]) -> [Int64] {
        events.compactMap { if case let .progress(p) = $0 { return p.bytesReceived } else { return nil } }
    }

    /// A progress event published after the subscription but before the record the snapshot
    /// came from was written is older than the snapshot: it is dropped, not yielded after it
    /// (it took the subscriber's progress back: a hogged CI run's
    /// `LifecycleTests.subscribersAreSeededAndLateOnesGetTheFinalEvent`). Newer ones follow.
    @Test func aHeldProgressOlderThanTheSnapshotIsDropped() async {
        let hub = EventHub()
        let (key, stream, _) = hub.subscribe(id: "x")
        hub.publish(Self.progress(100))   // the ticker, before the run wrote 200
        hub.publish(Self.progress(250))   // after it
        hub.seed(key, with: [Self.progress(200)])
        hub.publish(.ended(id: "x", .cancelled))
        var events: [DownloadEvent] = []
        for await e in stream { events.append(e) }
        #expect(Self.bytes(events) == [200, 250])
        #expect(events.last?.isFinal == true)
    }

    /// A subscriber of every download: each download's held progress is judged against its
    /// own snapshot, not another's.
    @Test func aGlobalSubscriberJudgesEachDownloadByItsOwnSnapshot() async {
        let hub = EventHub()
        let (key, stream) = hub.subscribeAll(seeded: false)   // held until its snapshot
        hub.publish(.progress(DownloadProgress(id: "a", bytesReceived: 50, totalBytes: 1000)))   // older than a's 60
        hub.publish(.progress(DownloadProgress(id: "b", bytesReceived: 70, totalBytes: 1000)))   // newer than b's 10
        hub.seed(key, with: [.progress(DownloadProgress(id: "a", bytesReceived: 60, totalBytes: 1000)),
                             .progress(DownloadProgress(id: "b", bytesReceived: 10, totalBytes: 1000))])
        hub.finishAll()
        var seen: [String] = []
        for await e in stream { if case let .progress(p) = e { seen.append("\(p.id)\(p.bytesReceived)") } }
        #expect(seen == ["a60", "b10", "b70"])
    }

    /// A snapshot with no progress (a queued download) drops nothing.
    @Test func withoutProgressInTheSnapshotEveryHeldEventFollows() async {
        let hub = EventHub()
        let (key, stream, _) = hub.subscribe(id: "x")
        hub.publish(Self.progress(100))
        hub.seed(key, with: [.stateChanged(id: "x", state: .queued, error: nil)])
        hub.publish(.ended(id: "x", .cancelled))
        var events: [DownloadEvent] = []
        for await e in stream { events.append(e) }
        #expect(Self.bytes(events) == [100])
    }
}
