import Foundation
import Testing
import CourierCore
@testable import CourierObservation

/// The pure rules under the observable models: an event's effect on a snapshot, a group's
/// sums, and what a feed keeps and says changed.
@Suite struct SnapshotRulesTests {
    static func record(_ id: String, state: DownloadState = .downloading, bytes: Int64 = 0, total: Int64? = nil, mediaId: String? = nil,
                       createdAt: Date = Date(timeIntervalSince1970: 1000)) -> DownloadRecord {
        var r = DownloadRecord(id: id, remoteUrl: "https://example.com/\(id)", localFinalPath: "\(id).bin", partialPath: "\(id).bin.partial",
                               mediaId: mediaId, now: createdAt)
        r.state = state
        r.bytesReceived = bytes
        r.totalBytes = total
        return r
    }

    @Test func aStoredRecordShowsItsBytesAndWaitsForTheEngineToSayItRuns() {
        let s = DownloadSnapshot(record: Self.record("a", state: .downloading, bytes: 500, total: 1000))
        #expect(s.phase == .queued)   // a stored "downloading" runs only once a downloader says so
        #expect(s.bytesReceived == 500 && s.fractionCompleted == 0.5)
        var failed = Self.record("b", state: .failed, bytes: 10, total: 100)
        failed.lastErrorCode = "E_TIMEOUT"; failed.lastErrorMessage = "no byte for 30 s"
        let f = DownloadSnapshot(record: failed)
        #expect(f.phase == .failed && f.error?.code == .timeout)
    }

    @Test func eventsMoveTheSnapshotAndTheClockStopsWhenBytesDo() {
        var s = DownloadSnapshot(record: Self.record("a", state: .queued))
        s.apply(.stateChanged(id: "a", state: .downloading, error: nil))
        s.apply(.progress(DownloadProgress(id: "a", bytesReceived: 400, totalBytes: 1000, bytesPerSecond: 200, secondsRemaining: 3)))
        #expect(s.phase == .downloading && s.bytesPerSecond == 200 && s.secondsRemaining == 3 && s.fractionCompleted == 0.4)
        s.apply(.progress(DownloadProgress(id: "other", bytesReceived: 999, totalBytes: 1000)))
        #expect(s.bytesReceived == 400)   // another download's event changes nothing
        let timeout = CourierError(.timeout, "idle")
        s.apply(.retrying(id: "a", attempt: 2, limit: 8, error: timeout, delay: .seconds(1)))
        #expect(s.phase == .retrying(attempt: 2, limit: 8) && s.error == timeout && s.bytesPerSecond == 0 && s.secondsRemaining == nil)
        s.apply(.ended(id: "a", .paused(nil)))
        #expect(s.phase == .paused && !s.isActive)
        var done = Self.record("a", state: .completed, bytes: 1000, total: 1000)
        done.localFinalPath = "moved/a.bin"
        s.apply(.ended(id: "a", .completed(done)))
        #expect(s.phase == .completed && s.fractionCompleted == 1 && s.destination == "moved/a.bin" && s.error == nil)
        s.apply(.ended(id: "a", .cancelled))
        #expect(s.phase == .cancelled && s.bytesReceived == 0)
    }

    @Test func aGroupAddsItsDownloadsUpAndKnowsItsSizeOnlyWhenEachIsKnown() {
        var a = DownloadSnapshot(record: Self.record("a", bytes: 300, total: 1000))
        a.apply(.progress(DownloadProgress(id: "a", bytesReceived: 300, totalBytes: 1000, bytesPerSecond: 100)))
        let b = DownloadSnapshot(record: Self.record("b", state: .completed, bytes: 500, total: 500))
        var g = GroupProgress([a, b])
        #expect(g.count == 2 && g.completedCount == 1 && g.bytesReceived == 800 && g.totalBytes == 1500)
        #expect(g.secondsRemaining == 7 && g.bytesPerSecond == 100 && !g.isComplete)
        let unknown = DownloadSnapshot(record: Self.record("c", bytes: 10, total: nil))
        g = GroupProgress([a, b, unknown])
        #expect(g.totalBytes == nil && g.fractionCompleted == nil)
        var cancelled = DownloadSnapshot(record: Self.record("d", bytes: 10, total: 10))
        cancelled.apply(.ended(id: "d", .cancelled))
        #expect(GroupProgress([b, cancelled]).isComplete)
    }

    @Test func aFeedSaysOnlyWhatChangedAndDropsWhatWasCancelled() throws {
        var state = FeedState(selection: .all)
        state.load([Self.record("b", createdAt: Date(timeIntervalSince1970: 2)), Self.record("a", createdAt: Date(timeIntervalSince1970: 1))])
        let firstUpdate = state.flush(initial: true)
        let first = try #require(firstUpdate)
        #expect(first.all.map(\.id) == ["a", "b"] && first.changed.count == 2 && first.isInitial)
        do { let r = state.flush(); #expect(r == nil) }   // nothing changed: no update
        do { let r = state.apply(.progress(DownloadProgress(id: "a", bytesReceived: 5, totalBytes: 10))); #expect(r == .applied) }
        do { let r = state.apply(.progress(DownloadProgress(id: "a", bytesReceived: 7, totalBytes: 10))); #expect(r == .applied) }
        let secondUpdate = state.flush()
        let second = try #require(secondUpdate)
        #expect(second.changed.map(\.bytesReceived) == [7] && second.all.count == 2)   // coalesced: the last of two
        do { let r = state.apply(.ended(id: "b", .cancelled)); #expect(r == .applied) }
        let thirdUpdate = state.flush()
        let third = try #require(thirdUpdate)
        #expect(third.removed == ["b"] && third.all.map(\.id) == ["a"])
        do { let r = state.apply(.stateChanged(id: "new", state: .queued, error: nil)); #expect(r == .needsRecord) }
        do { let r = state.apply(.ended(id: "gone", .cancelled)); #expect(r == .ignored) }
    }

    @Test func aSelectionKeepsOutWhatIsNotItsOwn() throws {
        var byPrefix = FeedState(selection: .idPrefix("media:"))
        do { let r = byPrefix.apply(.stateChanged(id: "photo:1", state: .queued, error: nil)); #expect(r == .ignored) }
        do { let r = byPrefix.apply(.stateChanged(id: "media:1", state: .queued, error: nil)); #expect(r == .needsRecord) }
        var byMedia = FeedState(selection: .mediaId("film"))
        do { let r = byMedia.apply(.progress(DownloadProgress(id: "x", bytesReceived: 1, totalBytes: nil))); #expect(r == .needsRecord) }
        do { let r = byMedia.insert(Self.record("x", mediaId: "other")); #expect(!r) }
        do { let r = byMedia.apply(.progress(DownloadProgress(id: "x", bytesReceived: 2, totalBytes: nil))); #expect(r == .ignored) }   // read once, not per event
        do { let r = byMedia.insert(Self.record("y", mediaId: "film")); #expect(r) }
        do { let r = byMedia.flush(); #expect(r?.all.map(\.id) == ["y"]) }
    }
}

/// A quick pause then resume through a `Progress`: the pause's own snapshot, showing after
/// the resume, is not "a pause made elsewhere" and does not pause the download again (the
/// resume was lost so, about one full run in five).
@Suite struct ProgressMirrorTests {
    @Test func theAppsOwnPauseShowingLateDoesNotUndoItsResume() {
        let progress = Progress(totalUnitCount: 100)
        let mirror = WeakProgress(progress)
        mirror.asked(.paused); progress.pause()
        mirror.asked(.downloading); progress.resume()
        let paused = DownloadSnapshot(record: SnapshotRulesTests.record("a", state: .paused, bytes: 10, total: 100))
        _ = ProgressMirror.show(paused, on: progress, mirror: mirror)
        #expect(!progress.isPaused)
        // Running again: the app's resume showing; then a pause made elsewhere is mirrored.
        let running = DownloadSnapshot(record: SnapshotRulesTests.record("a", state: .downloading, bytes: 20, total: 100))
        _ = ProgressMirror.show(running, on: progress, mirror: mirror)
        _ = ProgressMirror.show(paused, on: progress, mirror: mirror)
        #expect(progress.isPaused)
    }
}
