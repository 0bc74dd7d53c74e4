import Courier
import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// One device: its own database (with the app's `checklists` table) and attachments directory.
struct Device {
    let db: DatabasePool
    let dir: URL
    let queue: AttachmentQueue

    init(base: URL, name: String, storage: any RemoteStorage, handler: (any SyncErrorHandler)? = nil, localStorage: (any LocalStorage)? = nil,
         configure: (inout AttachmentQueueOptions) -> Void = { _ in }) throws {
        let root = base.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        db = try DatabasePool(path: root.appendingPathComponent("app.sqlite").path)
        try db.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS checklists (id TEXT PRIMARY KEY, description TEXT, completed INTEGER, photo_id TEXT)")
        }
        dir = root.appendingPathComponent("attachments")
        var options = AttachmentQueueOptions()
        options.syncInterval = .zero
        options.retryPolicy = RetryPolicy(baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))
        configure(&options)
        queue = try AttachmentQueue(database: db, directory: dir, remoteStorage: storage, errorHandler: handler, options: options, transport: testTransport(), localStorage: localStorage)
    }

    var watched: AsyncThrowingStream<[WatchedAttachmentItem], any Error> {
        AttachmentQueue.watch(sql: "SELECT photo_id FROM checklists WHERE photo_id IS NOT NULL", in: db, defaultExtension: "jpg")
    }

    func state(_ id: String) async throws -> AttachmentState? { try await queue.attachment(id: id)?.state }
}

func tempDir() -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-att-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func waitFor(_ timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return false
}

@Suite(.serialized) struct QueueTests {
    /// The seed's checklist example across two devices sharing one remote.
    @Test func checklistPhotoSyncsToAnotherDevice() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        let phone = try Device(base: base, name: "phone", storage: remote)
        let tablet = try Device(base: base, name: "tablet", storage: remote)
        try await phone.db.write { db in try db.execute(sql: "INSERT INTO checklists (id, description, completed) VALUES ('c1', 'Check valve', 0)") }
        try await tablet.db.write { db in try db.execute(sql: "INSERT INTO checklists (id, description, completed) VALUES ('c1', 'Check valve', 0)") }
        try await phone.queue.startSync(watching: phone.watched)
        try await tablet.queue.startSync(watching: tablet.watched)

        let photo = Data("a photo of a valve".utf8)
        let saved = try await phone.queue.saveFile(data: photo, mediaType: "image/jpeg", fileExtension: "jpg") { db, attachment in
            try db.execute(sql: "UPDATE checklists SET photo_id = ?, completed = 1 WHERE id = 'c1'", arguments: [attachment.id])
        }
        // Same transaction: the app's row points at the attachment, and it is queued.
        #expect(try await phone.db.read { db in try String.fetchOne(db, sql: "SELECT photo_id FROM checklists") } == saved.id)
        #expect(try await waitFor { try await phone.state(saved.id) == .synced })
        #expect(try Data(contentsOf: remote.directory.appendingPathComponent(saved.filename)) == photo)

        // The other device's data starts to reference it (as sync would write it): it downloads.
        try await tablet.db.write { db in try db.execute(sql: "UPDATE checklists SET photo_id = ? WHERE id = 'c1'", arguments: [saved.id]) }
        #expect(try await waitFor { try await tablet.state(saved.id) == .synced })
        let onTablet = try #require(try await tablet.queue.attachment(id: saved.id))
        #expect(onTablet.localURI == "\(saved.id).jpg" && onTablet.hasSynced)
        #expect(try Data(contentsOf: tablet.dir.appendingPathComponent(onTablet.localURI!)) == photo)

        // Unreferenced: archived, file kept as cache; referenced again: restored without a download.
        try await tablet.db.write { db in try db.execute(sql: "UPDATE checklists SET photo_id = NULL") }
        #expect(try await waitFor { try await tablet.state(saved.id) == .archived })
        #expect(FileManager.default.fileExists(atPath: tablet.dir.appendingPathComponent(onTablet.localURI!).path))
        try FileManager.default.removeItem(at: remote.directory.appendingPathComponent(saved.filename))   // a download would now fail
        try await tablet.db.write { db in try db.execute(sql: "UPDATE checklists SET photo_id = ?", arguments: [saved.id]) }
        #expect(try await waitFor { try await tablet.state(saved.id) == .synced })
        await phone.queue.stopSync()
        await tablet.queue.stopSync()
    }

    @Test func saveFileHookFailureLeavesNeitherRowNorFile() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let device = try Device(base: base, name: "d", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")))
        await #expect(throws: (any Error).self) {
            try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt") { db, _ in
                try db.execute(sql: "UPDATE no_such_table SET x = 1")
            }
        }
        #expect(try await device.queue.attachments().isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: device.dir.path)).isEmpty)
    }

    @Test func saveFromURLStreamsAndDeleteQueuesRemoteDeleteInOneTransaction() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        let device = try Device(base: base, name: "d", storage: remote)
        try await device.db.write { db in try db.execute(sql: "INSERT INTO checklists (id) VALUES ('c1')") }
        let source = base.appendingPathComponent("video.mp4")
        let big = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try big.write(to: source)
        let saved = try await device.queue.saveFile(from: source, mediaType: "video/mp4", fileExtension: nil) { db, a in
            try db.execute(sql: "UPDATE checklists SET photo_id = ?", arguments: [a.id])
        }
        #expect(saved.filename.hasSuffix(".mp4") && saved.size == Int64(big.count))
        await device.queue.sync()
        #expect(try await device.state(saved.id) == .synced)
        #expect(try Data(contentsOf: remote.directory.appendingPathComponent(saved.filename)) == big)

        try await device.queue.deleteFile(id: saved.id) { db, a in
            try db.execute(sql: "UPDATE checklists SET photo_id = NULL WHERE photo_id = ?", arguments: [a.id])
        }
        #expect(try await device.db.read { db in try String.fetchOne(db, sql: "SELECT photo_id FROM checklists") } == nil)
        #expect(!FileManager.default.fileExists(atPath: device.dir.appendingPathComponent(saved.filename).path))
        #expect(try await device.state(saved.id) == .queuedDelete)
        await device.queue.sync()
        #expect(try await device.queue.attachment(id: saved.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: remote.directory.appendingPathComponent(saved.filename).path))
    }

    @Test func cacheLimitEvictsOldestArchivedAndTheirFiles() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        let device = try Device(base: base, name: "d", storage: remote) { $0.archivedCacheLimit = 2 }
        var ids: [String] = []
        for i in 0..<5 {
            let a = try await device.queue.saveFile(data: Data("photo \(i)".utf8), mediaType: nil, fileExtension: "jpg")
            ids.append(a.id)
            await Self.nextMillisecond()   // distinct timestamps
        }
        await device.queue.sync()
        try await device.queue.reconcile(ids.map { WatchedAttachmentItem(id: $0) })
        #expect(try await device.queue.attachments().allSatisfy { $0.state == .synced })
        for (n, id) in ids.enumerated() {   // unreference one at a time, oldest first
            try await device.queue.reconcile(ids.suffix(from: n + 1).map { WatchedAttachmentItem(id: $0) })
            _ = id
            await Self.nextMillisecond()
        }
        let left = try await device.queue.attachments()
        #expect(left.map(\.id) == Array(ids.suffix(2)))   // the two most recently archived stay
        for id in ids.prefix(3) { #expect(!FileManager.default.fileExists(atPath: device.dir.appendingPathComponent("\(id).jpg").path)) }
        for id in ids.suffix(2) { #expect(FileManager.default.fileExists(atPath: device.dir.appendingPathComponent("\(id).jpg").path)) }
    }

    @Test func errorHandlerDecidesRetryOrArchive() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let flaky = FlakyStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failures: 2)
        let handler = RecordingHandler(retry: true)
        let device = try Device(base: base, name: "d", storage: flaky, handler: handler)
        try await device.queue.startSync()
        let a = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt")
        #expect(try await waitFor { try await device.state(a.id) == .synced })
        #expect(await handler.uploadErrors == 2)
        await device.queue.stopSync()

        // A handler that says archive: the download stops being retried.
        let missing = RecordingHandler(retry: false)
        let other = try Device(base: base, name: "e", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), handler: missing)
        try await other.queue.reconcile([WatchedAttachmentItem(id: "nowhere", fileExtension: "jpg")])
        await other.queue.sync()
        #expect(try await other.state("nowhere") == .archived)
        #expect(await missing.downloadErrors == 1)
    }

    @Test func withoutAHandlerRetriesForeverWithBackoffNotATightLoop() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let broken = FlakyStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failures: .max)
        let device = try Device(base: base, name: "d", storage: broken) {
            $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(50), maxDelay: .seconds(10))
        }
        try await device.queue.startSync()
        let started = ContinuousClock.now
        let a = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt")
        #expect(try await waitFor(.seconds(60)) { await broken.attempts >= 3 })   // it retries...
        let attempts = await broken.attempts
        let elapsed = (ContinuousClock.now - started).timeInterval
        await device.queue.stopSync()
        // ...with a backoff of 50 ms doubling (at least half of it, with jitter): in t
        // seconds about 1 + log2(t / 25 ms + 1) tries (3 more allowed), never hundreds. (A bound from the
        // time it took: a loaded machine makes fewer tries, not more; it was "3 to 10 in a
        // 2 s sleep", which a starved test could miss from below.)
        #expect(Double(attempts) <= 4 + log2(elapsed / 0.025 + 1), "\(attempts) attempts in \(elapsed) s")
        #expect(try await device.state(a.id) == .queuedUpload)   // still waiting, not archived
    }

    /// A row written by another connection (another process) is invisible to the local
    /// change observation: only the periodic timer picks it up.
    @Test func periodicTimerSyncsWhatNoTriggerSaw() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let remote = try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))
        let device = try Device(base: base, name: "d", storage: remote) { $0.syncInterval = .milliseconds(300) }
        try await device.queue.startSync()
        try Data("from elsewhere".utf8).write(to: device.dir.appendingPathComponent("ext.txt"))
        let other = try DatabasePool(path: base.appendingPathComponent("d/app.sqlite").path)
        try await other.write { db in
            try db.execute(sql: "INSERT INTO attachments (id, filename, state, timestamp, has_synced, local_uri) VALUES ('ext', 'ext.txt', 1, 0, 0, 'ext.txt')")
        }
        #expect(try await waitFor(.seconds(5)) { try await device.state("ext") == .synced })
        #expect(FileManager.default.fileExists(atPath: remote.directory.appendingPathComponent("ext.txt").path))
        await device.queue.stopSync()
    }

    @Test func oneSyncAtATimeAndOneTransferPerAttachment() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let slow = FlakyStorage(inner: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), failures: 0, delay: .milliseconds(100))
        let device = try Device(base: base, name: "d", storage: slow)
        // Queued while the queue is idle, so the first pass sees all six at once.
        for _ in 0..<6 { _ = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt") }
        try await device.queue.startSync()
        // A storm of triggers while a pass runs.
        for _ in 0..<50 { await device.queue.requestSync() }
        await device.queue.sync()
        #expect(await slow.attempts == 6)   // each uploaded once
        #expect(await slow.maxInFlightPerID == 1)
        #expect(await slow.maxInFlight == 4)   // the default limit, reached and never passed
        #expect(try await device.queue.attachments().allSatisfy { $0.state == .synced })
        await device.queue.stopSync()
    }
}

/// Wraps a storage: fails the first `failures` calls, counts calls and overlap.
actor FlakyStorage: RemoteStorage {
    let inner: LocalRemoteStorage
    var remaining: Int
    let delay: Duration
    var attempts = 0
    private var inFlight: [String: Int] = [:]
    var maxInFlightPerID = 0
    private var total = 0
    var maxInFlight = 0

    init(inner: LocalRemoteStorage, failures: Int, delay: Duration = .zero) {
        self.inner = inner
        self.remaining = failures
        self.delay = delay
    }

    private func begin(_ id: String) throws {
        attempts += 1
        inFlight[id, default: 0] += 1
        total += 1
        maxInFlightPerID = max(maxInFlightPerID, inFlight[id]!)
        maxInFlight = max(maxInFlight, total)
        if remaining > 0 {
            remaining -= 1
            inFlight[id]! -= 1
            total -= 1
            throw CourierError(.remoteStorage, "simulated outage")
        }
    }

    private func end(_ id: String) { inFlight[id]! -= 1; total -= 1 }

    func upload(fileAt file: URL, attachment: Attachment) async throws {
        try begin(attachment.id)
        try await Task.sleep(for: delay)
        defer { end(attachment.id) }
        try await inner.upload(fileAt: file, attachment: attachment)
    }

    func download(_ attachment: Attachment, to destination: URL) async throws {
        try begin(attachment.id)
        defer { end(attachment.id) }
        try await inner.download(attachment, to: destination)
    }

    func delete(_ attachment: Attachment) async throws {
        try begin(attachment.id)
        defer { end(attachment.id) }
        try await inner.delete(attachment)
    }
}

actor RecordingHandler: SyncErrorHandler {
    let retry: Bool
    var uploadErrors = 0, downloadErrors = 0, deleteErrors = 0
    init(retry: Bool) { self.retry = retry }
    func onDownloadError(attachment: Attachment, error: any Error) async -> Bool { downloadErrors += 1; return retry }
    func onUploadError(attachment: Attachment, error: any Error) async -> Bool { uploadErrors += 1; return retry }
    func onDeleteError(attachment: Attachment, error: any Error) async -> Bool { deleteErrors += 1; return retry }
}

extension QueueTests {
    /// Returns once the queue's clock (milliseconds) has moved past what it reads now: the
    /// next timestamp differs from every one before, whatever the machine's speed.
    static func nextMillisecond() async {
        let now = Attachment.now()
        while Attachment.now() == now { await Task.yield() }
    }
}
