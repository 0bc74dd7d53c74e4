import Courier
import Foundation
import GRDB
import Logging

/// Uploads, downloads and deletes attachments in step with the app's data (seed 001).
///
/// State lives in a local-only table of the app's own GRDB database; files live in one
/// directory, named by their file names, recorded relative to it. One sync pass runs at a
/// time; a trigger during a pass schedules one more pass, never a pile of them.
public actor AttachmentQueue {
    /// The directory holding the attachment files.
    public nonisolated let directory: URL
    /// The options.
    public nonisolated let options: AttachmentQueueOptions
    let writer: any DatabaseWriter
    let table: AttachmentTable
    let storage: any RemoteStorage
    let errorHandler: (any SyncErrorHandler)?
    let logger: Logger
    let downloader: Downloader?

    private var syncTask: Task<Void, Never>?
    private var passRequested = false
    private var background: [Task<Void, Never>] = []
    private var wakeTask: Task<Void, Never>?
    private var failures: [String: Int] = [:]
    private var notBefore: [String: ContinuousClock.Instant] = [:]
    /// Idle until ``startSync(watching:)`` or ``startSync()``; ``sync()`` runs a pass regardless.
    private var stopped = true

    /// Makes a queue over the app's database.
    /// - Parameters:
    ///   - database: the app's GRDB database; the attachments table (and Courier's download
    ///     table) are created there.
    ///   - directory: where attachment files live.
    ///   - remoteStorage: the backend.
    ///   - errorHandler: decides retry or archive after a failure; without one, retries go
    ///     on forever with backoff.
    ///   - options: the table's name, the archive's size, concurrency and intervals.
    ///   - logger: where the queue logs (never a credential).
    public init(database: any DatabaseWriter, directory: URL, remoteStorage: any RemoteStorage, errorHandler: (any SyncErrorHandler)? = nil,
                options: AttachmentQueueOptions = AttachmentQueueOptions(), logger: Logger = Logger(label: "courier.attachments")) throws {
        self.writer = database
        self.directory = directory.standardizedFileURL
        self.options = options
        self.table = try AttachmentTable(name: options.tableName)
        self.storage = remoteStorage
        self.errorHandler = errorHandler
        self.logger = logger
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do { try table.migrator().migrate(database) } catch {
            throw CourierError(.database, "cannot create the attachments table", underlying: error)
        }
        if let resumable = remoteStorage as? any ResumableRemoteStorage {
            var config = DownloaderConfiguration(rootDirectory: directory)
            config.retryPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(5), maxAttempts: 3)
            config.maxConcurrentDownloads = max(1, options.maxConcurrentTransfers)
            config.freeSpaceReserve = 16 << 20
            options.downloadConfiguration?(&config)
            let link = StorageLink(storage: resumable, table: table, writer: database)
            downloader = Downloader(configuration: config, database: try CourierDatabase(writer: database),
                                    urlRefresher: link, requestAuthorizer: link, logger: logger)
        } else {
            downloader = nil
        }
    }

    // MARK: Starting and stopping

    /// Starts syncing: repairs what a crash may have left, reconciles each emission of
    /// `watched` (the app's query of referenced attachment ids), syncs on every local
    /// change to the queue, and every ``AttachmentQueueOptions/syncInterval``.
    public func startSync<S: AsyncSequence & Sendable>(watching watched: S) async throws where S.Element == [WatchedAttachmentItem] {
        try await startCommon()
        background.append(Task { [weak self] in
            do {
                for try await items in watched {
                    guard let self else { return }
                    try await self.reconcile(items)
                }
            } catch {
                self?.logger.error("the watched attachments query failed: \(error)")
            }
        })
    }

    /// Starts syncing without a watched query (uploads and deletes, and reconciling that
    /// the app does with ``reconcile(_:)``).
    public func startSync() async throws {
        try await startCommon()
    }

    private func startCommon() async throws {
        stopped = false
        try await repair()
        let quoted = table.quoted
        let observation = ValueObservation.tracking { db in
            try String.fetchAll(db, sql: "SELECT id || ':' || state FROM \(quoted) WHERE state IN (0, 1, 2) ORDER BY id")
        }.removeDuplicates()
        let writer = self.writer
        background.append(Task { [weak self] in
            do {
                for try await _ in observation.values(in: writer) {
                    await self?.requestSync()
                }
            } catch {}
        })
        if options.syncInterval > .zero {
            let interval = options.syncInterval
            background.append(Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if Task.isCancelled { return }
                    await self?.requestSync()
                }
            })
        }
        requestSync()
    }

    /// Stops the triggers and waits for the running pass; downloads in flight stay resumable.
    public func stopSync() async {
        stopped = true
        background.forEach { $0.cancel() }
        background.removeAll()
        wakeTask?.cancel()
        wakeTask = nil
        await syncTask?.value
        await downloader?.shutdown()
    }

    // MARK: Saving and deleting

    /// Saves data as a new attachment queued for upload, and runs `updateHook` in the same
    /// transaction, so the app's row and the attachment appear together or not at all.
    @discardableResult
    public func saveFile(data: Data, mediaType: String?, fileExtension: String?, metaData: String? = nil,
                         updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws -> Attachment {
        let (id, filename) = try newName(fileExtension)
        let target = directory.appendingPathComponent(filename)
        let temp = directory.appendingPathComponent(".\(filename).tmp")
        do {
            try data.write(to: temp)
            guard rename(temp.path, target.path) == 0 else { throw CourierError(.fileWrite, "cannot write \(filename)") }
        } catch {
            unlink(temp.path)
            throw error as? CourierError ?? CourierError(.fileWrite, "cannot write \(filename)", underlying: error)
        }
        return try await commitSaved(id: id, filename: filename, size: Int64(data.count), mediaType: mediaType, metaData: metaData, updateHook: updateHook)
    }

    /// Saves a file (streamed, never held in memory) as a new attachment queued for upload,
    /// with the app's `updateHook` in the same transaction.
    @discardableResult
    public func saveFile(from source: URL, mediaType: String?, fileExtension: String?, metaData: String? = nil,
                         updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws -> Attachment {
        let (id, filename) = try newName(fileExtension ?? (source.pathExtension.isEmpty ? nil : source.pathExtension))
        let target = directory.appendingPathComponent(filename)
        try FileCopy.atomicCopy(from: source, to: target)
        return try await commitSaved(id: id, filename: filename, size: PartialFile.length(at: target), mediaType: mediaType, metaData: metaData, updateHook: updateHook)
    }

    private func newName(_ fileExtension: String?) throws -> (String, String) {
        let id = UUID().uuidString.lowercased()
        guard let ext = fileExtension, !ext.isEmpty else { return (id, id) }
        guard ext.utf8.count <= 32, ext.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) }) else {
            throw CourierError(.invalidArgument, "a file extension is 1 to 32 letters or digits")
        }
        return (id, "\(id).\(ext)")
    }

    private func commitSaved(id: String, filename: String, size: Int64, mediaType: String?, metaData: String?,
                             updateHook: @escaping @Sendable (Database, Attachment) throws -> Void) async throws -> Attachment {
        let attachment = Attachment(id: id, filename: filename, mediaType: mediaType, state: .queuedUpload, size: size, metaData: metaData, localURI: filename)
        let table = self.table
        do {
            try await writer.write { db in
                try table.upsert(db, attachment)
                try updateHook(db, attachment)
            }
        } catch {
            unlink(directory.appendingPathComponent(filename).path)
            throw error
        }
        requestSync()
        return attachment
    }

    /// Deletes the local file and queues the remote delete; `updateHook` runs in the same
    /// transaction (to unlink the app's rows).
    public func deleteFile(id: String, updateHook: @escaping @Sendable (Database, Attachment) throws -> Void = { _, _ in }) async throws {
        let table = self.table
        let attachment: Attachment = try await writer.write { db in
            guard var a = try table.fetch(db, id: id) else { throw CourierError(.notFound, "no attachment with id \(id)") }
            a.state = .queuedDelete
            a.timestamp = Attachment.now()
            try table.upsert(db, a)
            try updateHook(db, a)
            return a
        }
        removeLocalFile(attachment)
        requestSync()
    }

    // MARK: Reading

    /// Every attachment record, oldest first.
    public func attachments() async throws -> [Attachment] {
        let table = self.table
        return try await writer.read { db in try table.fetchAll(db) }
    }

    /// The record with this id.
    public func attachment(id: String) async throws -> Attachment? {
        let table = self.table
        return try await writer.read { db in try table.fetch(db, id: id) }
    }

    /// The local file of an attachment, when it has one.
    public nonisolated func localURL(for attachment: Attachment) -> URL? {
        attachment.localURI.map { directory.appendingPathComponent($0) }
    }

    // MARK: Reconciling

    /// Reconciles the app's current set of referenced attachments with the queue (seed 001):
    /// queues downloads, archives, restores, and expires the archive cache.
    public func reconcile(_ watched: [WatchedAttachmentItem]) async throws {
        let table = self.table
        let directory = self.directory
        let changes = try await writer.write { db -> Int in
            let existing = try table.fetchAll(db)
            let updates = Reconciler.reconcile(watched: watched, existing: existing, now: Attachment.now()) { a in
                a.localURI.map { FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path) } ?? false
            }
            for a in updates { try table.upsert(db, a) }
            return updates.count
        }
        if changes > 0 { logger.debug("reconciled \(changes) attachments") }
        try await expireCache()
        requestSync()
    }

    /// After a crash: a `SYNCED` attachment whose file is gone is queued for download again.
    func repair() async throws {
        let table = self.table
        let directory = self.directory
        try await writer.write { db in
            for var a in try table.fetchAll(db, states: [.synced]) {
                let present = a.localURI.map { FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path) } ?? false
                if !present {
                    a.state = .queuedDownload
                    a.localURI = nil
                    a.timestamp = Attachment.now()
                    try table.upsert(db, a)
                }
            }
        }
    }

    private func expireCache() async throws {
        let table = self.table
        let limit = options.archivedCacheLimit
        let expired: [Attachment] = try await writer.write { db in
            let gone = Reconciler.expired(try table.fetchAll(db, states: [.archived]), cacheLimit: limit)
            for a in gone { try table.delete(db, id: a.id) }
            return gone
        }
        for a in expired {
            removeLocalFile(a)
            if let downloader { try? await downloader.cancel(id: Self.downloadID(a.id)) }
        }
    }

    // MARK: Syncing

    /// Asks for a sync pass; during a pass, schedules exactly one more.
    public func requestSync() {
        guard !stopped else { return }
        if syncTask != nil {
            passRequested = true
            return
        }
        syncTask = Task { await self.runPasses() }
    }

    /// Runs a full pass now (after the running one), and returns when it is done.
    public func sync() async {
        let wasStopped = stopped
        stopped = false
        requestSync()
        if syncTask != nil { passRequested = true }
        await syncTask?.value
        stopped = wasStopped
    }

    private func runPasses() async {
        repeat {
            passRequested = false
            await pass()
        } while passRequested && !stopped
        syncTask = nil
        scheduleWake()
    }

    /// One pass: every queued upload, download and delete that is not backing off, at most
    /// ``AttachmentQueueOptions/maxConcurrentTransfers`` at once, then cache expiry.
    private func pass() async {
        let table = self.table
        let pending: [Attachment]
        do {
            pending = try await writer.read { db in try table.fetchAll(db, states: [.queuedUpload, .queuedDownload, .queuedDelete]) }
        } catch {
            logger.error("cannot read the attachment queue: \(error)")
            return
        }
        let now = ContinuousClock.now
        let due = pending.filter { (notBefore[$0.id] ?? now) <= now }
        let limit = max(1, options.maxConcurrentTransfers)
        await withTaskGroup(of: (Attachment, (any Error)?).self) { group in
            var iterator = due.makeIterator()
            var running = 0
            while running < limit, let next = iterator.next() {
                group.addTask { await (next, self.transfer(next)) }
                running += 1
            }
            while let (attachment, error) = await group.next() {
                await settle(attachment, error)
                if let next = iterator.next() {
                    group.addTask { await (next, self.transfer(next)) }
                }
            }
        }
        try? await expireCache()
    }

    /// Performs one transfer; returns its error, if any.
    private nonisolated func transfer(_ attachment: Attachment) async -> (any Error)? {
        do {
            switch attachment.state {
            case .queuedUpload: try await upload(attachment)
            case .queuedDownload: try await download(attachment)
            case .queuedDelete: try await remoteDelete(attachment)
            case .synced, .archived: break
            }
            return nil
        } catch {
            return error
        }
    }

    private nonisolated func upload(_ attachment: Attachment) async throws {
        guard let file = localURL(for: attachment), FileManager.default.fileExists(atPath: file.path) else {
            throw CourierError(.fileNotFound, "the file of attachment \(attachment.id) is missing; nothing to upload")
        }
        try await storage.upload(fileAt: file, attachment: attachment)
        try await markSynced(attachment, localURI: attachment.localURI, file: file)
    }

    /// Records a finished transfer, only if the attachment is still in the state the
    /// transfer started from (a delete or archive meanwhile wins).
    private nonisolated func markSynced(_ attachment: Attachment, localURI: String?, file: URL) async throws {
        var done = attachment
        done.state = .synced
        done.hasSynced = true
        done.localURI = localURI
        done.size = PartialFile.length(at: file)
        done.timestamp = Attachment.now()
        let table = self.table
        let finished = done
        _ = try await writer.write { db in try table.update(db, finished, ifStateIs: attachment.state) }
    }

    private nonisolated func download(_ attachment: Attachment) async throws {
        let filename = try SafePath.validateRelative(attachment.filename)
        let target = directory.appendingPathComponent(filename)
        if let downloader {
            let id = Self.downloadID(attachment.id)
            try await downloader.enqueue(DownloadRequest(id: id, url: try await (storage as! any ResumableRemoteStorage).downloadURL(for: attachment),
                                                         destination: filename, mediaId: attachment.id, mediaType: "attachment"))
            _ = try await downloader.waitForCompletion(id: id)
            try? await downloader.cancel(id: id)   // the engine's record is done; the file stays
        } else {
            try await storage.download(attachment, to: target)
        }
        // The file is in place before the record says SYNCED.
        try await markSynced(attachment, localURI: filename, file: target)
    }

    private nonisolated func remoteDelete(_ attachment: Attachment) async throws {
        try await storage.delete(attachment)
        removeLocalFile(attachment)
        let table = self.table
        try await writer.write { db in
            if let current = try table.fetch(db, id: attachment.id), current.state == .queuedDelete { try table.delete(db, id: attachment.id) }
        }
    }

    /// Records a transfer's outcome: success clears the backoff; failure asks the error
    /// handler (retry or archive), and backs off before the next try.
    private func settle(_ attachment: Attachment, _ error: (any Error)?) async {
        guard let error else {
            failures[attachment.id] = nil
            notBefore[attachment.id] = nil
            return
        }
        logger.warning("attachment \(attachment.id) \(attachment.state) failed: \(Redactor.redact(String(describing: error)))")
        var retry = true
        if let errorHandler {
            switch attachment.state {
            case .queuedDownload: retry = await errorHandler.onDownloadError(attachment: attachment, error: error)
            case .queuedUpload: retry = await errorHandler.onUploadError(attachment: attachment, error: error)
            case .queuedDelete: retry = await errorHandler.onDeleteError(attachment: attachment, error: error)
            default: break
            }
        } else if attachment.state == .queuedUpload, (error as? CourierError)?.code == .fileNotFound {
            retry = false   // no file, nothing will ever upload
        }
        if !retry {
            failures[attachment.id] = nil
            notBefore[attachment.id] = nil
            let table = self.table
            var archived = attachment
            archived.state = .archived
            archived.timestamp = Attachment.now()
            let record = archived
            _ = try? await writer.write { db in try table.update(db, record, ifStateIs: attachment.state) }
            return
        }
        let count = (failures[attachment.id] ?? 0) + 1
        failures[attachment.id] = count
        notBefore[attachment.id] = ContinuousClock.now + options.retryPolicy.delay(afterFailures: count, retryAfter: nil)
    }

    /// Wakes for the earliest backoff to end, so a retry does not wait for the timer.
    private func scheduleWake() {
        wakeTask?.cancel()
        guard !stopped, let earliest = notBefore.values.min() else { return }
        wakeTask = Task { [weak self] in
            try? await Task.sleep(until: earliest, clock: .continuous)
            if Task.isCancelled { return }
            await self?.requestSync()
        }
    }

    /// Failures in a row per attachment id (for tests and diagnostics).
    public var failureCounts: [String: Int] { failures }

    private nonisolated func removeLocalFile(_ attachment: Attachment) {
        if let url = localURL(for: attachment) { unlink(url.path) }
        unlink(directory.appendingPathComponent(attachment.filename).path + ".partial")
    }

    static func downloadID(_ attachmentID: String) -> String { "attachment:" + attachmentID }
}

/// Connects the resumable engine to the storage: fresh URLs (re-signed presigned links)
/// and auth headers, looked up from the attachment record.
struct StorageLink: URLRefreshing, RequestAuthorizing {
    let storage: any ResumableRemoteStorage
    let table: AttachmentTable
    let writer: any DatabaseWriter

    private func attachment(for record: DownloadRecord) async throws -> Attachment {
        let id = String(record.id.dropFirst("attachment:".count))
        let table = self.table
        if let a = try await writer.read({ db in try table.fetch(db, id: id) }) { return a }
        return Attachment(id: id, filename: record.localFinalPath, state: .queuedDownload)
    }

    func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String? {
        try await storage.downloadURL(for: attachment(for: record))
    }

    func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)] {
        try await storage.downloadHeaders(for: attachment(for: record))
    }
}
