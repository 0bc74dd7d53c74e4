import CourierTestSupport
import Courier
import CourierOrigin
import Foundation
import GRDB
import Testing
@_spi(Testing) @testable import CourierMedia

/// The sweep of what interrupted downloads leave (seed 003's "automatic cleanup of
/// incomplete downloads"), at launch and on demand.
@Suite(.serialized) struct MediaCleanupTests {
    /// Pauses `itemId`'s download once some bytes arrived; returns its version.
    private func pausedMidway(_ w: MediaWorld, _ itemId: String, source: String) async throws -> MediaVersion {
        try w.addItem(itemId, #"{"Id":"\#(itemId)","Type":"Movie","Name":"\#(itemId)","MediaSources":[{"Id":"\#(source)","Container":"mp4","Size":2097152}]}"#)
        try w.addFile(source, size: 2 << 20)
        w.throttle("/Items/\(source)/Download", 1 << 20, stallAfter: 1 << 20)   // the pause lands before the end
        let version = try await w.library.start(itemId: itemId)
        for await event in w.library.events(for: version) {
            if case let .progress(p) = event, p.bytesReceived > 256 << 10 { try await w.library.pause(version) }
            if event.isFinal { break }
        }
        w.origin.endStalls()
        return version
    }

    @Test func aLaunchReclaimsOrphansAndVersionsLeftTooLong() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let old = try await pausedMidway(w, "oldfilm", source: "o1")
        let recent = try await pausedMidway(w, "newfilm", source: "n1")
        // The old one was last touched 40 days ago.
        let db = await w.library.downloader.database
        try await db.writer.write { db in
            try db.execute(sql: "UPDATE courierDownload SET updatedAt = ? WHERE id = ?", arguments: [Date().addingTimeInterval(-40 * 86_400), MediaJob.taskId(old)])
        }
        // Leftovers no job or record owns: a partial and an incoming copy of a kill, an old
        // temporary metadata file, and a young one another process may be writing.
        let downloads = w.root.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads.appendingPathComponent("gone1"), withIntermediateDirectories: true)
        try Data(count: 300_000).write(to: downloads.appendingPathComponent("gone1/gone1-x.mkv.partial"))
        try FileManager.default.createDirectory(at: downloads.appendingPathComponent("abc123"), withIntermediateDirectories: true)
        try Data(count: 200_000).write(to: downloads.appendingPathComponent("abc123/abc123-def456.mp4.incoming"))
        try Data(count: 1_000).write(to: downloads.appendingPathComponent("gone1/.metadata.json.1a2b3c4d.tmp"))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3_600)], ofItemAtPath: downloads.appendingPathComponent("gone1/.metadata.json.1a2b3c4d.tmp").path)
        try Data(count: 1_000).write(to: downloads.appendingPathComponent("gone1/.metadata.json.9f8e7d6c.tmp"))
        let recentPartial = try #require(w.library.jobs.load(MediaJob.taskId(recent))).plannedPath + ".partial"
        let oldPartial = try #require(w.library.jobs.load(MediaJob.taskId(old))).plannedPath + ".partial"
        let oldBytes = PartialFile.length(at: w.root.appendingPathComponent(oldPartial))
        #expect(oldBytes > 0)
        let before = try w.library.size()

        // The next launch: a library over the same folder and database, with a 30-day limit.
        await w.library.shutdown()
        let library = try w.makeLibrary()
        await library.setAbandonedAfter(.seconds(30 * 86_400))
        #expect(try await library.resumeAll().isEmpty)   // paused stays paused
        let report = try #require(await library.lastCleanup)
        #expect(Set(report.removedFiles) == ["Downloads/gone1/gone1-x.mkv.partial", "Downloads/abc123/abc123-def456.mp4.incoming",
                                             "Downloads/gone1/.metadata.json.1a2b3c4d.tmp"])
        #expect(report.abandonedVersions == [old])
        #expect(report.reclaimedBytes == 300_000 + 200_000 + 1_000 + oldBytes)
        #expect(try library.size() == before - report.reclaimedBytes)
        // What is in flight and recent stays, resumable; the old version is gone for good.
        #expect(FileManager.default.fileExists(atPath: w.root.appendingPathComponent(recentPartial).path))
        #expect(FileManager.default.fileExists(atPath: downloads.appendingPathComponent("gone1/.metadata.json.9f8e7d6c.tmp").path))
        #expect(try await library.inFlight().map(\.version) == [recent])
        #expect(try await library.downloader.record(id: MediaJob.taskId(old)) == nil)
        // A second sweep finds nothing.
        let again = try await library.clean()
        #expect(again == MediaCleanReport())
        await library.shutdown()
    }

    /// A kill between a cancel's two steps leaves an engine record and its partial with no
    /// version: the sweep removes both; a completed record (a film in place) is never touched.
    @Test func aRecordWithNoVersionGoesAndItsBytesWithIt() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let version = try await pausedMidway(w, "killed", source: "k1")
        let taskId = MediaJob.taskId(version)
        let partial = try #require(w.library.jobs.load(taskId)).plannedPath + ".partial"
        w.library.jobs.remove(taskId)   // the cancel's first step, then the kill
        _ = try await w.library.download(itemId: "abc123")   // a film in the library, its record forgotten or completed
        let report = try await w.library.clean()
        #expect(report.orphanedRecords == [taskId])
        #expect(try await w.library.downloader.record(id: taskId) == nil)
        #expect(!FileManager.default.fileExists(atPath: w.root.appendingPathComponent(partial).path))
        #expect(w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "def456"))
    }
}
