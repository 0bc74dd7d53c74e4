import CourierTestSupport
import Courier
import CourierOrigin
import Foundation
import Testing
@testable import CourierMedia

/// Steering calls that overlap: a cancel after a resume of a running version, a subscriber
/// after a shutdown, a start after a kill took only a job's removal.
@Suite(.serialized) struct MediaSteeringTests {
    /// A resume of a version still running chains a second finisher behind the first; a
    /// cancel then stops the engine at once (it does not wait for the film to arrive and
    /// be put in the library) and leaves nothing.
    @Test func aCancelAfterAResumeOfARunningVersionStopsIt() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        w.throttle("/Items/def456/Download", 16 << 10)   // about 19 s for the whole file: the cancel lands long before its end
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        #expect(try await eventually { try await w.library.inFlight().first?.bytesReceived ?? 0 > 0 })
        try await w.library.resume(version)
        let events = Task { var all: [MediaDownloadEvent] = []; for await e in w.library.events(for: version) { all.append(e) }; return all }
        try await w.library.cancel(version)
        #expect(await events.value.last == .cancelled)
        #expect(!w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "def456"))
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/abc123").path))
        #expect(try await w.library.inFlight().isEmpty)
        #expect(try await w.library.downloader.database.allRecords().isEmpty)
    }

    /// After a shutdown, a subscriber is told `paused` at once instead of waiting for ever.
    @Test func aSubscriberAfterAShutdownIsToldAtOnce() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        w.throttle("/Items/def456/Download", 16 << 10)
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        await w.library.shutdown()
        var events: [MediaDownloadEvent] = []
        for await e in w.library.events(for: version) { events.append(e) }
        if case .paused? = events.last {} else { Issue.record("ended with \(String(describing: events.last))") }
    }

    /// A kill took only the removal of a finished version's job; pressing DOWNLOAD again
    /// before any resumeAll is a download again like any other: to `.incoming`, so a page
    /// answered now never lands on the copy.
    @Test func aStartAfterAKillAfterTheEndIsADownloadAgain() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let report = try await w.library.download(itemId: "abc123", versionId: "ghi789")
        var left = try await w.library.plan(itemId: "abc123", versionId: "ghi789", options: MediaDownloadOptions())
        left.uuid = try #require(w.library.downloadedVersions(itemId: "abc123").first { $0.versionId == "ghi789" }?.taskId)
        left.plannedPath = report.mediaPath
        try w.library.jobs.save(left)
        let page = "<!DOCTYPE html><html><body>Sign in" + String(repeating: " ", count: 30_000) + "</body></html>"
        try Data(page.utf8).write(to: w.served.appendingPathComponent("jellyfin/media/ghi789"))
        let planned = try await w.library.plan(itemId: "abc123", versionId: "ghi789", options: MediaDownloadOptions())
        #expect(planned.plannedPath.hasSuffix(".incoming") && planned.uuid != left.uuid)
        let code = await errorCode { try await w.library.download(itemId: "abc123", versionId: "ghi789") }
        #expect(code == "E_SIZE_MISMATCH" || code == "E_NOT_MEDIA", "\(String(describing: code))")
        #expect(w.file(report.mediaPath) == w.media["ghi789"])
        #expect(w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "ghi789"))
    }
}
