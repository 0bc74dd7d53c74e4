import Courier
import CourierOrigin
import CourierTestSupport
import Foundation
import Observation
import Testing
@testable import CourierObservation

/// What a SwiftUI view observes (issue 26), tested on Linux through `withObservationTracking`,
/// the same mechanism SwiftUI uses: a relaunched app shows each stored bar before a byte
/// arrives, a row changes at most 10 times a second, and every end is seen.
@Suite(.serialized) struct DownloadListTests {
    /// Counts the changes a view would see, per download.
    @MainActor final class Changes {
        var times: [String: [ContinuousClock.Instant]] = [:]
        var phases: [String: [DownloadSnapshot.Phase]] = [:]
        private var waits: [UUID: (ids: [String], continuation: CheckedContinuation<Bool, Never>)] = [:]

        func follow(_ item: DownloadItem) {
            withObservationTracking { _ = item.snapshot } onChange: { [weak self] in
                Task { @MainActor in
                    guard let self else { return }
                    self.times[item.id, default: []].append(.now)
                    if self.phases[item.id]?.last != item.phase { self.phases[item.id, default: []].append(item.phase) }
                    self.follow(item)
                    for (key, wait) in self.waits where self.completed(wait.ids) { self.waits[key] = nil; wait.continuation.resume(returning: true) }
                }
            }
        }

        private func completed(_ ids: [String]) -> Bool { ids.allSatisfy { phases[$0]?.last == .completed } }

        /// `true` once the last change seen of each of `ids` is its completion (`false` after
        /// `limit`: a change never seen; the limit only ends a wait that failed).
        func seeCompleted(_ ids: [String], within limit: Duration = .seconds(60)) async -> Bool {
            if completed(ids) { return true }
            let key = UUID()
            return await withCheckedContinuation { continuation in
                waits[key] = (ids, continuation)
                DispatchQueue.main.asyncAfter(deadline: .now() + limit.inSeconds) {
                    MainActor.assumeIsolated { self.waits.removeValue(forKey: key)?.continuation.resume(returning: false) }
                }
            }
        }

        /// The most changes of one download within any one second.
        func mostInOneSecond(_ id: String) -> Int {
            let t = times[id] ?? []
            var most = 0, start = 0
            for end in t.indices {
                while t[end] - t[start] >= .seconds(1) { start += 1 }
                most = max(most, end - start + 1)
            }
            return most
        }
    }

    @MainActor
    @Test func aRelaunchedAppSeesTheStoredBarsFirstThenAtMostTenChangesASecondThenEachEnd() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let names = ["a.bin", "b.bin", "c.bin"]
        for (i, name) in names.enumerated() { try w.serve(name, size: 24 << 20, seed: UInt64(i + 1)) }

        // The first launch fetches a part of each, then the app goes away.
        let first = try w.downloader { $0.maxBytesPerSecond = 4 << 20; $0.maxConcurrentDownloads = 3 }
        for name in names { try await first.enqueue(DownloadRequest(id: "film:\(name)", url: w.url(name), destination: name)) }
        let partway = try await until { try await first.database.allRecords().allSatisfy { $0.bytesReceived >= 1 << 20 } }
        #expect(partway)
        await first.shutdown()
        let stored = Dictionary(uniqueKeysWithValues: try await first.database.allRecords().map { ($0.id, $0.bytesReceived) })
        let requestsBefore = w.origin.requests.count

        // The relaunch: the list shows the stored bars before the engine starts.
        let second = try w.downloader { $0.maxBytesPerSecond = 12 << 20; $0.maxConcurrentDownloads = 3 }
        let list = DownloadList(downloader: second)
        var loaded = false
        withObservationTracking { _ = list.items } onChange: { }
        let filled = try await until { list.items.count == 3 }
        loaded = list.isLoaded
        #expect(filled && loaded)
        for item in list.items {
            #expect(item.bytesReceived == stored[item.id] && item.bytesReceived >= 1 << 20, "\(item.id)")
            #expect(item.totalBytes == 24 << 20 && item.phase == .queued)
        }
        #expect(w.origin.requests.count == requestsBefore)   // no byte asked for yet

        let changes = Changes()
        for item in list.items { changes.follow(item) }
        // A list asking for fewer updates gets fewer: the coalescing is the feed's, not only
        // the engine's own progress throttle (about ten a second).
        let slow = DownloadList(downloader: second, maxUpdatesPerSecond: 4)
        #expect(try await until { slow.items.count == 3 })
        let slowChanges = Changes()
        for item in slow.items { slowChanges.follow(item) }
        try await second.start()
        let ended = try await until(timeout: .seconds(60)) { list.items.allSatisfy { $0.phase == .completed } }
        #expect(ended)
        // Each follower's last change is the completion (a change is recorded a step after it
        // is made; the slower list's may come a quarter of a second after the other's).
        #expect(await changes.seeCompleted(list.items.map(\.id)))
        #expect(await slowChanges.seeCompleted(slow.items.map(\.id)))
        for item in list.items {
            let most = changes.mostInOneSecond(item.id)
            let count = changes.times[item.id]?.count ?? 0
            print("observation: \(item.id): \(count) changes, at most \(most) in one second, phases \(changes.phases[item.id] ?? [])")
            #expect(most <= 10, "\(item.id): \(most) changes in one second")
            #expect(count >= 5, "\(item.id): too few changes to tell (\(count))")
            #expect(changes.phases[item.id]?.last == .completed)
            #expect(item.fractionCompleted == 1 && item.bytesPerSecond == 0)
        }
        for item in slow.items {
            #expect(slowChanges.mostInOneSecond(item.id) <= 4, "\(item.id): \(slowChanges.mostInOneSecond(item.id)) changes in one second at 4 a second")
            #expect(slowChanges.phases[item.id]?.last == .completed)
        }
        #expect(list.progress.isComplete && list.progress.bytesReceived == 3 * (24 << 20))
        list.stop()
        slow.stop()
        await second.shutdown()
    }

    @MainActor
    @Test func aDownloadAskedForLaterJoinsTheListAndAGroupFollowsItsMediaItem() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        try w.serve("v1.bin", size: 300_000)
        try w.serve("v2.bin", size: 500_000)
        try w.serve("other.bin", size: 100_000)
        let d = try w.downloader()
        let list = DownloadList(downloader: d)
        #expect(try await until { list.isLoaded })
        let joined = Flag()
        withObservationTracking { _ = list.items } onChange: { joined.raise() }
        try await d.enqueue(DownloadRequest(id: "media:film:v1", url: w.url("v1.bin"), destination: "v1.bin", mediaId: "film"))
        try await d.enqueue(DownloadRequest(id: "media:film:v2", url: w.url("v2.bin"), destination: "v2.bin", mediaId: "film"))
        try await d.enqueue(DownloadRequest(id: "photo", url: w.url("other.bin"), destination: "other.bin"))
        let film = list.group(.mediaId("film"))
        #expect(try await until { film.progress.isComplete && list.items.count == 3 })
        #expect(joined.isRaised)
        #expect(film.items.map(\.id) == ["media:film:v1", "media:film:v2"])
        #expect(film.progress.bytesReceived == 800_000 && film.progress.totalBytes == 800_000)

        // A cancelled download leaves the list; its item says so.
        let photo = try #require(list.item(id: "photo"))
        try await d.cancel(id: "photo")
        #expect(try await until { list.item(id: "photo") == nil })
        #expect(photo.phase == .cancelled)
        list.stop()
        await d.shutdown()
    }

    @Test func aProgressFollowsItsDownloadAndPausesAndCancelsIt() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        try w.serve("p.bin", size: 8 << 20)
        try w.serve("q.bin", size: 8 << 20)
        let d = try w.downloader { $0.maxBytesPerSecond = 2 << 20 }
        try await d.enqueue(DownloadRequest(id: "p", url: w.url("p.bin"), destination: "p.bin"))
        let progress = d.progress(for: "p")
        #expect(progress.isCancellable && progress.isPausable && progress.kind == .file)
        #expect(try await eventually { progress.totalUnitCount == 8 << 20 && progress.completedUnitCount > 0 })
        progress.pause()
        #expect(try await eventually { try await d.record(id: "p")?.state == .paused })
        progress.resume()
        #expect(try await eventually { try await d.record(id: "p")?.state == .downloading })
        progress.cancel()
        #expect(try await eventually { try await d.record(id: "p") == nil })

        // One that completes ends at its whole size.
        let quick = try w.downloader()
        try await quick.enqueue(DownloadRequest(id: "q", url: w.url("q.bin"), destination: "q.bin"))
        let done = quick.progress(for: "q")
        #expect(try await eventually { done.completedUnitCount == 8 << 20 && done.totalUnitCount == 8 << 20 })
        #expect(done.fractionCompleted == 1)
        await d.shutdown()
        await quick.shutdown()
    }
}

/// Set once from an observation's `onChange`.
final class Flag: @unchecked Sendable {   // behind a lock
    private let lock = NSLock()
    private var raised = false
    func raise() { lock.lock(); raised = true; lock.unlock() }
    var isRaised: Bool { lock.lock(); defer { lock.unlock() }; return raised }
}

/// Waits on the main actor until `condition` holds (true) or `timeout` passes (false): long,
/// as ``eventually(timeout:_:)``'s, since it only bounds a wait that failed (CI saw a 2 MiB
/// download on loopback take more than 20 s while the parallel suite starved the process).
@MainActor func until(timeout: Duration = .seconds(60), _ condition: @MainActor () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
