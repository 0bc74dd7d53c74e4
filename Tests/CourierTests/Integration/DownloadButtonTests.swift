import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// Seed 002's seven rules and "Clear data", one test each, against the live origin.
@Suite(.serialized) struct DownloadButtonTests {
    func request(_ fx: Fixture, sha: String? = nil) -> DownloadRequest {
        DownloadRequest(id: "video_1", url: fx.url("v.mp4"), destination: "videos/v.mp4", sha256: sha)
    }

    func completed(_ fx: Fixture, _ d: Downloader) async throws -> Data {
        let data = try fx.serve("v.mp4", size: 300_000)
        try await d.enqueue(request(fx))
        _ = try await d.waitForCompletion(id: "video_1")
        return data
    }

    @Test func rule1CompleteAndOpensIsOpened() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            _ = try await completed(fx, d)
            let requests = fx.origin.requests.count
            let action = try await DownloadButton(downloader: d).press(request(fx))
            #expect(action == .open(fx.root.appendingPathComponent("videos/v.mp4")))
            #expect(fx.origin.requests.count == requests)   // nothing downloaded
            await d.shutdown()
        }
    }

    @Test func rule2CompleteButMissingDownloads() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            let data = try await completed(fx, d)
            try FileManager.default.removeItem(at: fx.root.appendingPathComponent("videos/v.mp4"))
            guard case .downloadStarted = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected a download"); return }
            _ = try await d.waitForCompletion(id: "video_1")
            #expect(fx.finalData("videos/v.mp4") == data)
            await d.shutdown()
        }
    }

    @Test func beyondTheSeedATruncatedFileCountsAsMissing() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            let data = try await completed(fx, d)
            try Data(data.prefix(1000)).write(to: fx.root.appendingPathComponent("videos/v.mp4"))
            guard case .downloadStarted = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected a download"); return }
            _ = try await d.waitForCompletion(id: "video_1")
            #expect(fx.finalData("videos/v.mp4") == data)
            // Same size, other bytes: caught when the button re-hashes.
            var other = data; other[0] ^= 0xFF
            try other.write(to: fx.root.appendingPathComponent("videos/v.mp4"))
            try await d.enqueue(DownloadRequest(id: "video_2", url: fx.url("v.mp4"), destination: "videos/w.mp4", sha256: Fixture.sha256(data)))
            _ = try await d.waitForCompletion(id: "video_2")
            try other.write(to: fx.root.appendingPathComponent("videos/w.mp4"))
            let strict = DownloadButton(downloader: d, verifyChecksumOnOpen: true)
            guard case .downloadStarted = try await strict.press(DownloadRequest(id: "video_2", url: fx.url("v.mp4"), destination: "videos/w.mp4", sha256: Fixture.sha256(data))) else {
                Issue.record("a replaced file must download again"); return
            }
            _ = try await d.waitForCompletion(id: "video_2")
            #expect(fx.finalData("videos/w.mp4") == data)
            await d.shutdown()
        }
    }

    @Test func rule3CompleteButFailsToOpenIsAnError() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            _ = try await completed(fx, d)
            let button = DownloadButton(downloader: d) { _ in throw CourierError(.fileRead, "codec not supported") }
            #expect(try await button.press(request(fx)) == .error(CourierError(.fileRead, "codec not supported")))
            await d.shutdown()
        }
    }

    @Test(arguments: [DownloadState.downloading, .queued, .handedOff])
    func rule4InProgressIsJudgedByTheRecordAlone(state: DownloadState) async throws {
        try await withFixture { fx in
            try fx.serve("v.mp4", size: 1000)
            let db = try fx.database()
            var record = DownloadRecord(id: "video_1", remoteUrl: fx.url("v.mp4"), localFinalPath: "videos/v.mp4", partialPath: "videos/v.mp4.partial")
            record.state = state                 // no file at all, no running task
            try await db.save(record)
            let d = try fx.downloader()
            guard case let .inProgress(r) = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected in progress"); return }
            #expect(r.state == state)
            #expect(fx.origin.requests.isEmpty)
            await d.shutdown()
        }
    }

    @Test func rule5NoRecordDownloads() async throws {
        try await withFixture { fx in
            let data = try fx.serve("v.mp4", size: 5000)
            let d = try fx.downloader()
            guard case .downloadStarted = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected a download"); return }
            _ = try await d.waitForCompletion(id: "video_1")
            #expect(fx.finalData("videos/v.mp4") == data)
            await d.shutdown()
        }
    }

    @Test(arguments: [DownloadState.paused, .failed])
    func rule6OtherStatesDownloadAgain(_ state: DownloadState) async throws {
        try await withFixture { fx in
            let data = try fx.serve("v.mp4", size: 5000)
            let db = try fx.database()
            var record = DownloadRecord(id: "video_1", remoteUrl: fx.url("v.mp4"), localFinalPath: "videos/v.mp4", partialPath: "videos/v.mp4.partial")
            record.state = state
            try await db.save(record)
            let d = try fx.downloader()
            guard case .downloadStarted = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected a download"); return }
            _ = try await d.waitForCompletion(id: "video_1")
            #expect(fx.finalData("videos/v.mp4") == data)
            await d.shutdown()
        }
    }

    @Test func rule7PreviousRecordAndFileAreCleanedBeforeDownloading() async throws {
        try await withFixture { fx in
            let data = try fx.serve("v.mp4", size: 5000)
            let db = try fx.database()
            try FileManager.default.createDirectory(at: fx.root.appendingPathComponent("videos"), withIntermediateDirectories: true)
            try Data("stale partial".utf8).write(to: fx.root.appendingPathComponent("videos/v.mp4.partial"))
            try Data("stale final".utf8).write(to: fx.root.appendingPathComponent("videos/v.mp4"))
            var record = DownloadRecord(id: "video_1", remoteUrl: fx.url("v.mp4"), localFinalPath: "videos/v.mp4", partialPath: "videos/v.mp4.partial")
            record.state = .failed; record.etag = "\"old\""; record.totalBytes = 13; record.bytesReceived = 13; record.attemptCount = 7
            try await db.save(record)
            let d = try fx.downloader()
            guard case let .downloadStarted(fresh) = try await DownloadButton(downloader: d).press(request(fx)) else { Issue.record("expected a download"); return }
            #expect(fresh.attemptCount == 0 && fresh.etag == nil && fresh.bytesReceived == 0)
            _ = try await d.waitForCompletion(id: "video_1")
            #expect(fx.finalData("videos/v.mp4") == data)
            #expect(fx.origin.requests.first?.range == nil)   // nothing of the stale partial was kept
            await d.shutdown()
        }
    }

    /// Rule 7 by video: an earlier task of the same video (same media type and id) stored
    /// under another id goes too, record, partial and file; another video's task stays.
    @Test func rule7CleansEveryEarlierTaskOfTheVideoWhateverItsId() async throws {
        try await withFixture { fx in
            let data = try fx.serve("v.mp4", size: 5000)
            let db = try fx.database()
            try FileManager.default.createDirectory(at: fx.root.appendingPathComponent("videos"), withIntermediateDirectories: true)
            for (id, media, file) in [("old_task", "7", "videos/old.mp4"), ("older_task", "7", "videos/older.mp4"), ("other_video", "8", "videos/other.mp4")] {
                try Data("kept bytes".utf8).write(to: fx.root.appendingPathComponent(file + ".partial"))
                try Data("a final file".utf8).write(to: fx.root.appendingPathComponent(file))
                var record = DownloadRecord(id: id, remoteUrl: fx.url("v.mp4"), localFinalPath: file, partialPath: file + ".partial",
                                            mediaId: media, mediaType: "video")
                record.state = .paused
                try await db.save(record)   // two records of video 7: v6 allows a media group to hold several
            }
            let d = try fx.downloader()
            let press = DownloadRequest(id: "video_7", url: fx.url("v.mp4"), destination: "videos/v.mp4", mediaId: "7", mediaType: "video")
            guard case .downloadStarted = try await DownloadButton(downloader: d).press(press) else { Issue.record("expected a download"); return }
            _ = try await d.waitForCompletion(id: "video_7")
            #expect(fx.finalData("videos/v.mp4") == data)
            for gone in ["old_task", "older_task"] { #expect(try await d.record(id: gone) == nil, "\(gone)") }
            for file in ["videos/old.mp4", "videos/old.mp4.partial", "videos/older.mp4", "videos/older.mp4.partial"] { #expect(!fx.exists(file), "\(file)") }
            #expect(try await d.record(id: "other_video") != nil)
            #expect(fx.exists("videos/other.mp4") && fx.exists("videos/other.mp4.partial"))
            await d.shutdown()
        }
    }

    @Test func clearDataRemovesRecordAndFile() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            _ = try await completed(fx, d)
            try await DownloadButton(downloader: d).clearData(id: "video_1")
            #expect(try await d.record(id: "video_1") == nil)
            #expect(!fx.exists("videos/v.mp4") && !fx.exists("videos/v.mp4.partial"))
            await d.shutdown()
        }
    }
}
