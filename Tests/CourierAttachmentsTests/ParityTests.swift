import Courier
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// Issue 16, PowerSync parity: the restore rule, archiving after a pass, upload-only
/// devices, start-up verification, the network coming back, and the delete error path.
@Suite(.serialized) struct ParityTests {
    func insert(_ device: Device, _ id: String, _ state: AttachmentState, hasSynced: Bool, localURI: String?) async throws {
        try await device.db.write { db in
            try db.execute(sql: "INSERT INTO attachments (id, filename, state, timestamp, has_synced, local_uri) VALUES (?, ?, ?, 1, ?, ?)",
                           arguments: [id, "\(id).jpg", state.rawValue, hasSynced, localURI])
        }
    }

    /// An unsynced save that was archived (its upload failed and the handler gave up) and is
    /// referenced again is uploaded: it used to come back as a download and 404 forever.
    @Test func archivedUnsyncedSaveIsRestoredAsAnUpload() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        let flaky = FlakyStorage(inner: remote, failures: 1)
        let device = try Device(base: base, name: "d", storage: flaky, handler: RecordingHandler(retry: false))
        let photo = Data("never uploaded".utf8)
        let saved = try await device.queue.saveFile(data: photo, mediaType: nil, fileExtension: "jpg")
        await device.queue.sync()
        #expect(try await device.state(saved.id) == .archived)

        try await device.queue.reconcile([WatchedAttachmentItem(id: saved.id, fileExtension: "jpg")])
        #expect(try await device.state(saved.id) == .queuedUpload)
        await device.queue.sync()
        #expect(try await device.state(saved.id) == .synced)
        #expect(try Data(contentsOf: remote.directory.appendingPathComponent(saved.filename)) == photo)
    }

    /// An upload that completes for an id the app no longer references ends ARCHIVED after
    /// that pass, without a new emission of the watched query, and without more passes.
    @Test func uploadFinishedForAnUnwatchedIDIsArchivedAfterThePass() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let flaky = FlakyStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failures: 0)
        let device = try Device(base: base, name: "d", storage: flaky)
        let saved = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "jpg")
        try await device.queue.reconcile([])   // the app never referenced it (or dropped it)
        #expect(try await device.state(saved.id) == .queuedUpload)   // not uploaded yet: kept
        await device.queue.sync()
        let after = try #require(try await device.queue.attachment(id: saved.id))
        #expect(after.state == .archived && after.hasSynced)
        #expect(await flaky.attempts == 1)

        // Without a watched set (startSync() alone), nothing is archived.
        let other = try Device(base: base, name: "e", storage: flaky)
        let kept = try await other.queue.saveFile(data: Data("y".utf8), mediaType: nil, fileExtension: "jpg")
        await other.queue.sync()
        #expect(try await other.state(kept.id) == .synced)
    }

    /// An upload-only device: no record for new watched ids, no download, uploads still go.
    @Test func uploadOnlyDeviceNeverDownloads() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        try Data("elsewhere".utf8).write(to: remote.directory.appendingPathComponent("r.jpg"))
        let flaky = FlakyStorage(inner: remote, failures: 0)
        let device = try Device(base: base, name: "d", storage: flaky) { $0.downloadAttachments = false }
        try await insert(device, "gone", .archived, hasSynced: true, localURI: "gone.jpg")   // would need a download
        try await insert(device, "queued", .queuedDownload, hasSynced: false, localURI: nil)   // left from before
        try await insert(device, "lost", .synced, hasSynced: true, localURI: "lost.jpg")   // its file is missing
        let saved = try await device.queue.saveFile(data: Data("mine".utf8), mediaType: nil, fileExtension: "jpg")

        try await device.queue.reconcile(["r", "gone", "queued", "lost", saved.id].map { WatchedAttachmentItem(id: $0, fileExtension: "jpg") })
        #expect(try await device.queue.attachment(id: "r") == nil)
        #expect(try await device.state("gone") == .archived)
        let lost = try #require(try await device.queue.attachment(id: "lost"))
        #expect(lost.state == .archived && lost.localURI == nil)
        await device.queue.sync()
        #expect(await flaky.attempts == 1)   // the upload only
        #expect(try await device.state(saved.id) == .synced)
        #expect(try await device.state("queued") == .queuedDownload)
        #expect(!FileManager.default.fileExists(atPath: device.dir.appendingPathComponent("r.jpg").path))
    }

    enum VerifyCase: String, CaseIterable, Sendable {
        case present, foundUnderFilename, uploadMissing, archivedMissing, syncedMissing, syncedMissingUploadOnly
    }

    /// Start-up verification, one case at a time, against real files.
    @Test(arguments: VerifyCase.allCases)
    func verification(_ kind: VerifyCase) async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let device = try Device(base: base, name: "d", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))) {
            $0.downloadAttachments = kind != .syncedMissingUploadOnly
        }
        let (state, uri, file): (AttachmentState, String, String?) = switch kind {
        case .present: (.synced, "r.jpg", "r.jpg")
        case .foundUnderFilename: (.synced, "moved/r.jpg", "r.jpg")
        case .uploadMissing: (.queuedUpload, "r.jpg", nil)
        case .archivedMissing: (.archived, "r.jpg", nil)
        case .syncedMissing, .syncedMissingUploadOnly: (.synced, "r.jpg", nil)
        }
        try await insert(device, "r", state, hasSynced: state == .synced, localURI: uri)
        if let file { try Data("bytes".utf8).write(to: device.dir.appendingPathComponent(file)) }
        let changed = try await device.queue.verifyAttachments()
        let after = try #require(try await device.queue.attachment(id: "r"))
        switch kind {
        case .present: #expect(changed.isEmpty && after.state == .synced && after.localURI == "r.jpg")
        case .foundUnderFilename: #expect(after.state == .synced && after.localURI == "r.jpg")
        case .uploadMissing, .archivedMissing, .syncedMissingUploadOnly: #expect(after.state == .archived && after.localURI == nil)
        case .syncedMissing: #expect(after.state == .queuedDownload && after.localURI == nil)
        }
    }

    /// startSync verifies: a SYNCED attachment whose file went away is downloaded again.
    @Test func startSyncVerifiesAndDownloadsWhatWentMissing() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        try Data("remote bytes".utf8).write(to: remote.directory.appendingPathComponent("r.jpg"))
        let device = try Device(base: base, name: "d", storage: remote)
        try await insert(device, "r", .synced, hasSynced: true, localURI: "r.jpg")
        try await device.queue.startSync()
        #expect(try await waitFor { try await device.state("r") == .synced })
        #expect(try Data(contentsOf: device.dir.appendingPathComponent("r.jpg")) == Data("remote bytes".utf8))
        await device.queue.stopSync()
    }

    /// The network comes back: a transfer backing off for 30 s or more starts at once.
    @Test func networkAvailableRetriesAtOnceInsteadOfAfterTheBackoff() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let offline = SwitchableStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failUploads: true)
        let device = try Device(base: base, name: "d", storage: offline) {
            $0.retryPolicy = RetryPolicy(baseDelay: .seconds(60), maxDelay: .seconds(600))   // the first retry waits 30 to 60 s
        }
        try await device.queue.startSync()
        let saved = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt")
        #expect(try await waitFor { await device.queue.failureCounts[saved.id] == 1 })
        #expect(await offline.uploadAttempts == 1)

        await offline.setFailUploads(false)   // the network is back
        await device.queue.notifyNetworkAvailable()
        #expect(await device.queue.failureCounts.isEmpty)
        // A safety timeout, far shorter than the backoff: the retry is an event, not a race.
        #expect(try await waitFor(.seconds(20)) { try await device.state(saved.id) == .synced })
        #expect(await offline.uploadAttempts == 2)
        await device.queue.stopSync()
    }

    /// A failed remote delete: the handler's `false` archives the record; `true` keeps it
    /// queued, backing off (no second attempt right away).
    @Test(arguments: [false, true])
    func deleteErrorHandlerDecides(retry: Bool) async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let refusing = SwitchableStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failDeletes: true)
        let handler = RecordingHandler(retry: retry)
        let device = try Device(base: base, name: "d", storage: refusing, handler: handler) {
            $0.retryPolicy = RetryPolicy(baseDelay: .seconds(60), maxDelay: .seconds(600))
        }
        let saved = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt")
        await device.queue.sync()
        try await device.queue.deleteFile(id: saved.id)
        await device.queue.sync()
        #expect(await handler.deleteErrors == 1)
        #expect(await refusing.deleteAttempts == 1)
        if retry {
            #expect(try await device.state(saved.id) == .queuedDelete)
            #expect(await device.queue.failureCounts[saved.id] == 1)
            await device.queue.sync()   // backing off: not attempted again
            #expect(await refusing.deleteAttempts == 1)
        } else {
            #expect(try await device.state(saved.id) == .archived)
            #expect(await device.queue.failureCounts[saved.id] == nil)
        }
    }
}
