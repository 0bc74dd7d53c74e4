import CourierTestSupport
import Courier
import CourierOrigin
import Foundation
import Testing
@_spi(Testing) @testable import CourierMedia

/// A version already in the library, downloaded again or given subtitles; a film refused
/// by the engine on its announced size; the metadata lock, removal, and a shutdown while a
/// version is being finished.
@Suite(.serialized) struct MediaInLibraryTests {
    /// Seed 003: a version downloaded again replaces its copy atomically. A web page
    /// answered this time fails and never costs the copy there.
    @Test func aFailedDownloadAgainKeepsTheCopyInTheLibrary() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("keep1", #"{"Id":"keep1","Type":"Movie","Name":"Kept","MediaSources":[{"Id":"k1","Container":"mp4"}]}"#)
        let good = try w.addFile("k1", size: 60_000)
        let first = try await w.library.download(itemId: "keep1")
        #expect(w.file(first.mediaPath) == good)
        let entry = try #require(try w.metadata("keep1/metadata.json").versions.first)
        // The server now answers a login page with 200 (no size announced).
        let page = "<!DOCTYPE html><html><body>Please sign in" + String(repeating: " ", count: 30_000) + "</body></html>"
        try Data(page.utf8).write(to: w.served.appendingPathComponent("jellyfin/media/k1"))
        #expect(await errorCode { try await w.library.download(itemId: "keep1") } == "E_NOT_MEDIA")
        #expect(w.file(first.mediaPath) == good)
        #expect(try w.metadata("keep1/metadata.json").versions == [entry])
        #expect(w.tree().allSatisfy { !$0.contains(".incoming") })
        #expect(try await w.library.inFlight().isEmpty)
        // A good new copy replaces it, under the same name.
        let newer = try w.addFile("k1", size: 70_000)
        let again = try await w.library.download(itemId: "keep1")
        #expect(again.mediaPath == first.mediaPath && w.file(again.mediaPath) == newer)
        #expect(try w.metadata("keep1/metadata.json").versions.count == 1)
    }

    /// Cancelling a download again leaves the copy in the library and nothing else.
    @Test func cancellingADownloadAgainKeepsTheCopy() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("keep2", #"{"Id":"keep2","Type":"Movie","Name":"Kept","MediaSources":[{"Id":"k2","Container":"mp4","Size":2097152}]}"#)
        let good = try w.addFile("k2", size: 2 << 20)
        let first = try await w.library.download(itemId: "keep2")
        w.throttle("/Items/k2/Download", 128 << 10)   // 16 s for the whole file: the cancel lands long before its end, however loaded the machine
        let version = try await w.library.start(itemId: "keep2")
        #expect(try await eventually { try await w.library.inFlight().first?.bytesReceived ?? 0 > 0 })
        try await w.library.cancel(version)
        #expect(w.file(first.mediaPath) == good)
        #expect(w.tree().allSatisfy { !$0.contains(".incoming") })
        #expect(w.library.isItemVersionDownloaded(itemId: "keep2", mediaSourceId: "k2"))
    }

    /// A page answered where a film of a known size was announced: the engine refuses it
    /// before a byte is written, and the library says what it was.
    @Test func aPageWhereASizeWasAnnouncedIsNotMediaAndNothingIsWritten() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("page2", #"{"Id":"page2","Type":"Movie","Name":"Paged","MediaSources":[{"Id":"p2","Container":"mp4","Size":5000000}]}"#)
        let page = "<!DOCTYPE html><html><body>Session expired" + String(repeating: " ", count: 30_000) + "</body></html>"
        try Data(page.utf8).write(to: w.served.appendingPathComponent("jellyfin/media/p2.html"))
        #expect(await errorCode { try await w.library.download(itemId: "page2") } == "E_NOT_MEDIA")
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/page2").path))
        #expect(try await w.library.downloader.database.allRecords().isEmpty && w.library.jobs.all().isEmpty)
        // A film of another size than announced: its own code, nothing kept either.
        try w.addItem("size2", #"{"Id":"size2","Type":"Movie","Name":"Sized","MediaSources":[{"Id":"z2","Container":"mp4","Size":5000000}]}"#)
        try w.addFile("z2", size: 100_000)
        #expect(await errorCode { try await w.library.download(itemId: "size2") } == "E_SIZE_MISMATCH")
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/size2").path))
        let media = w.origin.requests.filter { $0.path.hasSuffix("/z2/Download") }
        #expect(media.count == 1)   // refused at its headers: not retried
    }

    /// Subtitles for a version in the library, asked for later: fetched beside it and added
    /// to its entry, the media not downloaded again; a kill while they come finishes them at
    /// the next launch.
    @Test func subtitlesAskedForLaterComeWithoutTheMedia() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("sub2", #"{"Id":"sub2","Type":"Movie","Name":"Later","MediaSources":[{"Id":"sv2","Container":"mp4","Size":40000,"MediaStreams":[{"Index":2,"Type":"Subtitle","Codec":"subrip","Language":"eng"},{"Index":4,"Type":"Subtitle","Codec":"webvtt"}]}]}"#)
        try w.addFile("sv2", size: 40_000)
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("jellyfin/subtitles"), withIntermediateDirectories: true)
        try Data("1\n00:00:01,000 --> 00:00:02,000\nHello.\n".utf8).write(to: w.served.appendingPathComponent("jellyfin/subtitles/sv2-2.srt"))
        try Data("WEBVTT\n\n00:01.000 --> 00:02.000\nHi.\n".utf8).write(to: w.served.appendingPathComponent("jellyfin/subtitles/sv2-4.vtt"))
        let first = try await w.library.download(itemId: "sub2", options: MediaDownloadOptions(subtitles: .indexes([4])))
        #expect(first.subtitlePaths == ["Downloads/sub2/sub2-sv2.4.vtt"])
        let entry = try #require(try w.metadata("sub2/metadata.json").versions.first)
        w.origin.clearRequests()

        let later = MediaDownloadOptions(subtitles: .indexes([2]), keepsMediaInLibrary: true)
        let report = try await w.library.download(itemId: "sub2", options: later)
        #expect(report.subtitlePaths == ["Downloads/sub2/sub2-sv2.2.eng.srt", "Downloads/sub2/sub2-sv2.4.vtt"])
        #expect(!w.origin.requests.contains { $0.path.hasSuffix("/Download") })
        let now = try #require(try w.metadata("sub2/metadata.json").versions.first)
        #expect(now.subtitles?.map(\.index) == [2, 4] && now.downloadDate == entry.downloadDate && now.taskId == entry.taskId)

        // Nothing lacking: completed at once, no request at all.
        w.origin.clearRequests()
        let atOnce = try await w.library.download(itemId: "sub2", options: later)
        #expect(atOnce.mediaPath == report.mediaPath && atOnce.subtitlePaths == report.subtitlePaths)
        #expect(!w.origin.requests.contains { !$0.path.hasPrefix("/Items/sub2") || $0.path.hasSuffix("/Download") || $0.path.contains("Subtitles") })

        // Killed while a subtitle comes: the job stays, and the next launch fetches it.
        try FileManager.default.removeItem(at: w.root.appendingPathComponent("Downloads/sub2/sub2-sv2.2.eng.srt"))
        try MetadataStore(root: w.root).record(entry, for: try await w.library.mediaServer.item(id: "sub2"), series: nil)   // back to [4] only
        let job = try await w.library.plan(itemId: "sub2", versionId: nil, options: later)
        try w.library.jobs.save(job)
        await w.library.shutdown()
        w.origin.clearRequests()
        w.library = try w.makeLibrary()
        #expect(try await w.library.resumeAll() == [job.version])
        let resumed = try await w.library.completion(of: job.version)
        #expect(resumed.subtitlePaths.count == 2 && w.file("Downloads/sub2/sub2-sv2.2.eng.srt") != nil)
        #expect(!w.origin.requests.contains { $0.path.hasSuffix("/Download") })
        #expect(w.library.jobs.all().isEmpty)
    }

    /// The metadata lock: while another process holds it, a finished version waits before
    /// it writes its entry (two processes never drop each other's).
    @Test func aVersionWaitsForTheMetadataLockBeforeItsEntry() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let fd = open(w.root.appendingPathComponent(".courier-media.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(fd >= 0 && flock(fd, LOCK_EX) == 0)
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        var sawFinishing = false
        for await event in w.library.events(for: version) { if event == .finishing { sawFinishing = true; break } }
        #expect(sawFinishing)
        try await Task.sleep(for: .milliseconds(300))
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/abc123/metadata.json").path))
        flock(fd, LOCK_UN)
        close(fd)
        let report = try await w.library.completion(of: version)
        #expect(report.mediaPath == "Downloads/abc123/abc123-def456.mp4")
        #expect(try w.metadata("abc123/metadata.json").versions.map(\.versionId) == ["def456"])
    }

    /// A job whose download never reached the engine (killed between the two) is queued
    /// with no bytes, not finishing at 100 %; resumed at launch, it downloads.
    @Test func aJobWithoutItsRecordIsQueuedAndResumes() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let job = try await w.library.plan(itemId: "abc123", versionId: "ghi789", options: MediaDownloadOptions())
        try w.library.jobs.save(job)
        let row = try #require(try await w.library.inFlight().first)
        #expect(row.state == "queued" && row.bytesReceived == 0 && row.totalBytes == 200_000)
        #expect(try await w.library.resumeAll() == [job.version])
        let report = try await w.library.completion(of: job.version)
        #expect(w.file(report.mediaPath) == w.media["ghi789"])
    }

    /// Removing an item cancels what is in flight under it first: no job, record, partial
    /// or folder stays, and the copy of another version goes with the item.
    @Test func removeCancelsTheVersionsInFlight() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try await w.library.download(itemId: "abc123", versionId: "ghi789")
        w.throttle("/Items/def456/Download", 16 << 10)   // about 19 s for the whole file
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        #expect(try await eventually { try await w.library.inFlight().first?.bytesReceived ?? 0 > 0 })
        try await w.library.remove(itemId: "abc123")
        var events: [MediaDownloadEvent] = []
        for await e in w.library.events(for: version) { events.append(e) }
        #expect(events == [.cancelled])
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/abc123").path))
        #expect(try await w.library.inFlight().isEmpty && w.library.jobs.all().isEmpty)
        #expect(try await w.library.downloader.database.allRecords().isEmpty)
    }

    /// The library shuts down while a version is being finished: its stream ends `paused`
    /// (not failed), its job and record stay, and the next launch finishes it without
    /// fetching the media again.
    @Test func aShutdownWhileFinishingPausesAndTheNextLaunchFinishes() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let downloader = await w.library.downloader
        await w.library.setAfterMediaInPlace { await downloader.shutdown() }
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        let events = Task { var all: [MediaDownloadEvent] = []; for await e in w.library.events(for: version) { all.append(e) }; return all }
        #expect(try await eventually { await downloader.isShutDown })
        await w.library.shutdown()
        let seen = await events.value
        if case .paused? = seen.last {} else { Issue.record("the stream ended with \(String(describing: seen.last))") }
        #expect(!seen.contains { if case .failed = $0 { return true } else { return false } })
        #expect(w.library.jobs.all().map(\.version) == [version])

        w.origin.clearRequests()
        w.library = try w.makeLibrary()
        #expect(try await w.library.resumeAll() == [version])
        let report = try await w.library.completion(of: version)
        #expect(w.file(report.mediaPath) == w.media["def456"])
        #expect(!w.origin.requests.contains { $0.path.hasSuffix("/Download") && $0.bodyBytesSent > 0 })
        #expect(try w.metadata("abc123/metadata.json").versions.map(\.versionId) == ["def456"])
    }

    /// Another process cancels the version while this one finishes it (it removes the job
    /// and the file): no metadata entry is written for the file it removed, and the end here
    /// is `cancelled`.
    @Test func aCancelFromAnotherProcessWhileFinishingLeavesNoEntry() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let root = w.root, jobs = w.library.jobs
        await w.library.setAfterMediaInPlace {
            // What `courier media cancel` in another process does, holding the lock.
            for job in jobs.all() {
                jobs.remove(job.taskId)
                try? FileManager.default.removeItem(at: root.appendingPathComponent("Downloads/abc123/abc123-def456.mp4"))   // test: the other process's removal
            }
        }
        let version = try await w.library.start(itemId: "abc123", versionId: "def456")
        var events: [MediaDownloadEvent] = []
        for await e in w.library.events(for: version) { events.append(e) }
        #expect(events.last == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/abc123/metadata.json").path))
        #expect(!w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "def456"))
        #expect(try await w.library.downloader.database.allRecords().isEmpty)
    }

    /// Killed after a page that arrived for a download again was refused and removed, but
    /// before its record was forgotten: the next launch never takes the copy in the
    /// library for what arrived (nor judges it by the page's type): it downloads again.
    @Test func aKillAfterARefusedDownloadAgainNeverCostsTheCopy() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("keep3", #"{"Id":"keep3","Type":"Movie","Name":"Kept","MediaSources":[{"Id":"k3","Container":"mp4"}]}"#)
        let good = try w.addFile("k3", size: 60_000)
        let first = try await w.library.download(itemId: "keep3")
        let page = "<!DOCTYPE html><html><body>Sign in" + String(repeating: " ", count: 30_000) + "</body></html>"
        try Data(page.utf8).write(to: w.served.appendingPathComponent("jellyfin/media/k3"))
        // The download again arrives (as .incoming) and is refused; the kill lands before the record goes.
        let job = try await w.library.plan(itemId: "keep3", versionId: nil, options: MediaDownloadOptions())
        #expect(job.plannedPath.hasSuffix(".incoming"))
        try w.library.jobs.save(job)
        let downloader = await w.library.downloader
        try await downloader.enqueue(try await w.library.request(for: job))
        _ = try await downloader.waitForCompletion(id: job.taskId)
        try FileManager.default.removeItem(at: w.root.appendingPathComponent(job.plannedPath))
        await w.library.shutdown()
        w.library = try w.makeLibrary()
        #expect(try await w.library.resumeAll() == [job.version])
        #expect(await errorCode { _ = try await w.library.completion(of: job.version) } == "E_NOT_MEDIA")
        #expect(w.file(first.mediaPath) == good)
        #expect(w.library.isItemVersionDownloaded(itemId: "keep3", mediaSourceId: "k3"))
    }

    /// Killed between a download again's job and its engine record: the next launch
    /// downloads it (the copy in the library is not taken for its end).
    @Test func aDownloadAgainKilledBeforeItsRecordDownloadsAtTheNextLaunch() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("keep4", #"{"Id":"keep4","Type":"Movie","Name":"Kept","MediaSources":[{"Id":"k4","Container":"mp4"}]}"#)
        try w.addFile("k4", size: 60_000)
        let first = try await w.library.download(itemId: "keep4")
        let newer = try w.addFile("k4", size: 70_000)
        let job = try await w.library.plan(itemId: "keep4", versionId: nil, options: MediaDownloadOptions())
        try w.library.jobs.save(job)
        #expect(try await w.library.inFlight().first?.state == "queued")
        await w.library.shutdown()
        w.library = try w.makeLibrary()
        #expect(try await w.library.resumeAll() == [job.version])
        let report = try await w.library.completion(of: job.version)
        #expect(report.mediaPath == first.mediaPath && w.file(report.mediaPath) == newer)
    }
}
