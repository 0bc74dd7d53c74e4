import CourierTestSupport
import Courier
import CourierOrigin
import Foundation
import Testing
@_spi(Testing) @testable import CourierMedia

/// Seed 002's DOWNLOAD button over the media library's versions (seed 003), from the same
/// table of cases as the engine's button (``ButtonCase``), and "Clear data" for a version.
@Suite(.serialized) struct MediaButtonTests {
    struct DoesNotOpen: Error {}

    @Test(arguments: ButtonCase.allCases)
    func theRulesOverVersions(_ kind: ButtonCase) async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try await check(kind, w)
    }

    private func check(_ kind: ButtonCase, _ w: MediaWorld) async throws {
        let library: MediaLibrary = w.library
        let version = MediaVersion(itemId: "abc123", versionId: "def456")
        let path = "/Items/def456/Download"
        switch kind {
        case .noRecord: break
        case .completeOpens, .completeButMissing, .completeButDoesNotOpen:
            let report = try await library.download(itemId: "abc123", versionId: "def456")
            if kind == .completeButMissing { try FileManager.default.removeItem(at: w.root.appendingPathComponent(report.mediaPath)) }
        case .inFlight, .paused:
            w.throttle(path, 100_000, stallAfter: 200_000)   // in flight until the test lets it go
            _ = try await library.start(itemId: "abc123", versionId: "def456")
            await w.awaitBytes(version)
            if kind == .paused { try await library.pause(version) }
        case .failed:
            var missing = Fault(); missing.failStatus = 404
            w.origin.setFault(missing, for: path)
            _ = try? await library.download(itemId: "abc123", versionId: "def456")   // it fails: that is the case
            #expect(try await library.inFlight().first?.state == "failed")
        }
        let refuses: @Sendable (URL) throws -> Void = { _ in throw DoesNotOpen() }
        let opens: @Sendable (URL) throws -> Void = kind == .completeButDoesNotOpen ? refuses : DownloadButton.defaultOpen
        let verdict = DownloadButtonRules.decide(try await library.buttonHolding(version), opens: opens)
        #expect(ButtonCase.words(verdict) == kind.expected)
        if kind != .inFlight { w.origin.setFault(nil, for: path); w.origin.endStalls() }
        let action = try await library.pressDownload(itemId: "abc123", versionId: "def456", opens: opens)
        switch action {
        case let .open(file):
            #expect(kind == .completeOpens && file.lastPathComponent == "abc123-def456.mp4")
        case .error:
            #expect(kind == .completeButDoesNotOpen)
        case let .inProgress(v):
            #expect(kind == .inFlight && v == version)
            w.origin.setFault(nil, for: path)
            w.origin.endStalls()
        case let .downloadStarted(v):
            // Rule 7 cleaned up first; the version downloads again, into the library.
            #expect([ButtonCase.noRecord, .completeButMissing, .paused, .failed].contains(kind) && v == version)
            let report = try await library.completion(of: version)
            #expect(w.file(report.mediaPath) == w.media["def456"])
            #expect(library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "def456"))
        }
        // Never a request for the film to open it.
        if kind == .completeOpens { #expect(w.origin.requests.filter { $0.path == path }.count == 1) }
    }

    /// Off by default, as the seed says: a paused version's bytes are kept only when asked.
    @Test func aStoppedVersionResumesItsBytesOnlyWhenAsked() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let version = MediaVersion(itemId: "abc123", versionId: "def456")
        w.throttle("/Items/def456/Download", 100_000, stallAfter: 200_000)   // the pause lands before the end
        _ = try await w.library.start(itemId: "abc123", versionId: "def456")
        await w.awaitBytes(version)
        try await w.library.pause(version)
        w.origin.endStalls()
        w.origin.setFault(nil, for: "/Items/def456/Download")
        w.origin.clearRequests()
        #expect(try await w.library.pressDownload(itemId: "abc123", versionId: "def456", resumingStopped: true) == .downloadStarted(version))
        _ = try await w.library.completion(of: version)
        let resumed = try #require(w.origin.requests.first { $0.path == "/Items/def456/Download" })
        #expect(resumed.range?.hasPrefix("bytes=") == true && resumed.range != "bytes=0-")
    }

    /// A press that cannot download (the server unreachable) destroys nothing: the paused
    /// version keeps its bytes and its record. And rule 7 reaches an engine record left with
    /// no job (a kill inside a cancel): the next press starts from zero, not from its bytes.
    @Test func aPressThatCannotDownloadKeepsWhatIsThereAndRule7ReachesOrphans() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let version = MediaVersion(itemId: "abc123", versionId: "def456")
        let taskId = MediaJob.taskId(version)
        w.throttle("/Items/def456/Download", 100_000, stallAfter: 200_000)   // the pause lands before the end
        _ = try await w.library.start(itemId: "abc123", versionId: "def456")
        await w.awaitBytes(version)
        try await w.library.pause(version)
        w.origin.endStalls()
        let partial = try #require(w.library.jobs.load(taskId)).plannedPath + ".partial"
        let kept = PartialFile.length(at: w.root.appendingPathComponent(partial))
        #expect(kept > 0)
        await w.library.shutdown()
        let offline = try MediaLibrary(root: w.root, server: try JellyfinServer(baseURL: "http://127.0.0.1:9/", token: nil),
                                       database: try CourierDatabase(path: w.base.appendingPathComponent("courier.sqlite").path))
        await #expect(throws: CourierError.self) { try await offline.pressDownload(itemId: "abc123", versionId: "def456") }
        #expect(PartialFile.length(at: w.root.appendingPathComponent(partial)) == kept)
        #expect(try await offline.downloader.record(id: taskId)?.state == .paused)
        await offline.shutdown()

        // The cancel's first step, then a kill: a record and its bytes, no job.
        let library = try w.makeLibrary()
        library.jobs.remove(taskId)
        w.origin.setFault(nil, for: "/Items/def456/Download")
        w.origin.clearRequests()
        #expect(try await library.pressDownload(itemId: "abc123", versionId: "def456") == .downloadStarted(version))
        let report = try await library.completion(of: version)
        #expect(w.file(report.mediaPath) == w.media["def456"])
        #expect(w.origin.requests.filter { $0.path == "/Items/def456/Download" }.allSatisfy { $0.range == nil || $0.range == "bytes=0-" })
        await library.shutdown()
    }

    /// A press names a version by its kind too: with only a transcoded copy in the library, a
    /// press without transcoding means the static version (downloaded, the copy left alone),
    /// and a press with the same transcoding opens the copy, offline.
    @Test func aPressTellsStaticFromTranscoded() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addFile("def456.mp4", size: 100_000, folder: "transcoded")
        let transcoding = MediaDownloadOptions(transcoding: TranscodeOptions(container: "mp4", videoCodec: "h264", audioCodec: "aac", maxBitrate: 2_000_000))
        let copy = try await w.library.download(itemId: "abc123", versionId: "def456", options: transcoding)
        let transcoded = MediaVersion(itemId: "abc123", versionId: copy.versionId)
        w.origin.clearRequests()
        #expect(try await w.library.pressDownload(itemId: "abc123", options: transcoding) == .open(w.root.appendingPathComponent(copy.mediaPath)))
        #expect(w.origin.requests.isEmpty)
        let plain = MediaVersion(itemId: "abc123", versionId: "def456")
        #expect(try await w.library.pressDownload(itemId: "abc123") == .downloadStarted(plain))
        let report = try await w.library.completion(of: plain)
        #expect(w.file(report.mediaPath) == w.media["def456"])
        #expect(w.library.mediaFile(for: transcoded) != nil)   // the copy stays
    }

    /// "Clear data": the version's file, subtitles and entry go; the other version stays.
    @Test func clearDataRemovesOneVersion() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        _ = try await w.library.download(itemId: "abc123", versionId: "def456")
        _ = try await w.library.download(itemId: "abc123", versionId: "ghi789")
        try await w.library.clearData(MediaVersion(itemId: "abc123", versionId: "def456"))
        #expect(!w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "def456"))
        #expect(w.library.isItemVersionDownloaded(itemId: "abc123", mediaSourceId: "ghi789"))
        #expect(try w.metadata("abc123/metadata.json").versions.map(\.versionId) == ["ghi789"])
        try await w.library.clearData(MediaVersion(itemId: "abc123", versionId: "def456"))   // nothing left: no error
    }
}
