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
    /// The app's database; failures leave as `E_DATABASE`.
    let writer: MappedWriter
    let table: AttachmentTable
    let storage: any RemoteStorage
    /// The remote storage the queue was given (the app releases it: ``RemoteStorage/shutdown()``).
    public nonisolated var remoteStorage: any RemoteStorage { storage }
    let errorHandler: (any SyncErrorHandler)?
    let logger: Logger
    let downloader: Downloader?

    var syncTask: Task<Void, Never>?
    var passRequested = false
    var background: [Task<Void, Never>] = []
    var wakeTask: Task<Void, Never>?
    var failures: [String: Int] = [:]
    var notBefore: [String: ContinuousClock.Instant] = [:]
    /// Idle until ``startSync(watching:)`` or ``startSync()``; ``sync()`` runs a pass regardless.
    var stopped = true

    /// Makes a queue over the app's database.
    /// - Parameters:
    ///   - database: the app's GRDB database; the attachments table (and Courier's download
    ///     table) are created there.
    ///   - directory: where attachment files live.
    ///   - remoteStorage: the backend.
    ///   - errorHandler: decides retry or archive after a failure; without one, retries go
    ///     on forever with backoff.
    ///   - options: the table's name, the archive's size, concurrency and intervals.
    ///   - transport: how the engine speaks HTTP for downloads (`URLSessionTransport` in an
    ///     app; AsyncHTTPClient by default).
    ///   - logger: where the queue logs (never a credential).
    public init(database: any DatabaseWriter, directory: URL, remoteStorage: any RemoteStorage, errorHandler: (any SyncErrorHandler)? = nil,
                options: AttachmentQueueOptions = AttachmentQueueOptions(), transport: (any HTTPTransport)? = nil,
                logger: Logger = Logger(label: "courier.attachments")) throws {
        self.writer = MappedWriter(database)
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
            let writer = MappedWriter(database), table = self.table
            let link = Credentials.storage(resumable) { record in
                let id = String(record.id.dropFirst("attachment:".count))
                return try await writer.read { db in try table.fetch(db, id: id) } ?? Attachment(id: id, filename: record.localFinalPath, state: .queuedDownload)
            }
            downloader = Downloader(configuration: config, database: try CourierDatabase(writer: database), transport: transport,
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

    func startCommon() async throws {
        stopped = false
        try await repair()
        let quoted = table.quoted
        let observation = ValueObservation.tracking { db in
            try String.fetchAll(db, sql: "SELECT id || ':' || state FROM \(quoted) WHERE state IN (0, 1, 2) ORDER BY id")
        }.removeDuplicates()
        let writer = self.writer.writer
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
                    try? await Task.sleep(for: interval)   // a cancelled sleep ends early; the loop checks cancellation next
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
        try AtomicWrite.write(data, to: target)
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

    func newName(_ fileExtension: String?) throws -> (String, String) {
        let id = UUID().uuidString.lowercased()
        guard let ext = fileExtension, !ext.isEmpty else { return (id, id) }
        guard ext.utf8.count <= 32, ext.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) }) else {
            throw CourierError(.invalidArgument, "a file extension is 1 to 32 letters or digits")
        }
        return (id, "\(id).\(ext)")
    }

    func commitSaved(id: String, filename: String, size: Int64, mediaType: String?, metaData: String?,
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

    func expireCache() async throws {
        let table = self.table
        let limit = options.archivedCacheLimit
        let expired: [Attachment] = try await writer.write { db in
            let gone = Reconciler.expired(try table.fetchAll(db, states: [.archived]), cacheLimit: limit)
            for a in gone { try table.delete(db, id: a.id) }
            return gone
        }
        for a in expired {
            removeLocalFile(a)
            if let downloader { try? await downloader.cancel(id: Self.downloadID(a.id)) }   // no engine record left for it is what we want
        }
    }

    // MARK: Syncing

    /// Failures in a row per attachment id (for tests and diagnostics).
    public var failureCounts: [String: Int] { failures }

    static func downloadID(_ attachmentID: String) -> String { "attachment:" + attachmentID }
}
