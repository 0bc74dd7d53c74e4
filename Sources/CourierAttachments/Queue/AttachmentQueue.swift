import Courier
import Foundation
import GRDB
import Logging

/// Uploads, downloads and deletes attachments in step with the app's data (seed 001).
///
/// State lives in a local-only table of the app's own GRDB database; files live in a
/// ``LocalStorage`` (by default ``FileSystemLocalStorage``: one directory), named by their
/// file names. One sync pass runs at a time; a trigger during a pass schedules one more
/// pass, never a pile of them.
public actor AttachmentQueue {
    /// The directory holding the attachment files (with the default local storage).
    public nonisolated let directory: URL
    /// Where the attachment files are kept; every local file operation goes through it.
    public nonisolated let localStorage: any LocalStorage
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
    /// Whether the queue made its downloader (and so shuts it down with itself).
    let ownsDownloader: Bool
    /// Where the local storage's staging folder is under the downloader's root (`""` for a
    /// downloader of the queue's own, rooted there).
    let enginePrefix: String
    /// The engine's store (the app's database, or the shared downloader's): the engine's
    /// attachment downloads, and the records of resumable uploads (``UploadRecord``, id
    /// `attachment:<id>`).
    let engineDatabase: CourierDatabase

    var syncTask: Task<Void, Never>?
    var passRequested = false
    var background: [Task<Void, Never>] = []
    var wakeTask: Task<Void, Never>?
    var failures: [String: Int] = [:]
    /// The last failure of each attachment still owed a transfer (cleared by a success).
    var lastErrors: [String: CourierError] = [:]
    var notBefore: [String: ContinuousClock.Instant] = [:]
    /// The ids of the last watched set (``reconcile(_:)``); re-applied after each pass so an
    /// upload that finishes for an id no longer watched is archived at once.
    var lastWatchedIDs: Set<String>?
    /// Set while ``clearQueue()`` runs: no transfer starts, no outcome is recorded.
    var clearing = false
    /// Between the start and the end of ``handOffUploads(to:)``: nothing new starts, and a
    /// transfer stopped for it is not a failure.
    var handingOff = 0
    /// The largest progress told for each upload with the system (``uploadHandOffProgress(uploadId:inFlight:)``),
    /// from the start of its last hand-off (one entry per upload handed off by this process).
    var handOffReported: [String: Int64] = [:]
    /// Idle until ``startSync(watching:)`` or ``startSync()``; ``sync()`` runs a pass regardless.
    var stopped = true
    /// The watched attachments given to PowerSync's initializer, reconciled by ``startSync()``.
    let watchedSource: WatchedSource?

    /// Makes a queue over the app's database.
    /// - Parameters:
    ///   - database: the app's GRDB database; the attachments table (and Courier's download
    ///     table) are created there.
    ///   - directory: where attachment files live (with the default local storage).
    ///   - remoteStorage: the backend.
    ///   - errorHandler: decides retry or archive after a failure; without one, retries go
    ///     on forever with backoff.
    ///   - options: the table's name, the archive's size, concurrency and intervals.
    ///   - transport: how the queue's own downloader speaks HTTP (the platform's default
    ///     when `nil`); not used with `downloader`.
    ///   - downloader: the app's downloader, shared with its other features (one scheduler,
    ///     one concurrency limit, one background hand-off). Its root directory must hold the
    ///     local storage's staging folder; the queue's downloads and upload records then live
    ///     in its database, and ``stopSync()`` leaves it running. `nil`: a downloader of the
    ///     queue's own, over `database`.
    ///   - logger: where the queue logs (never a credential).
    ///   - localStorage: where the files are kept; `nil` (the default) keeps plain files in
    ///     `directory` (``FileSystemLocalStorage``). Given one, the queue never touches
    ///     `directory`.
    public init(database: any DatabaseWriter, directory: URL, remoteStorage: any RemoteStorage, errorHandler: (any SyncErrorHandler)? = nil,
                options: AttachmentQueueOptions = AttachmentQueueOptions(), transport: (any HTTPTransport)? = nil, downloader: Downloader? = nil,
                logger: Logger = Logger(label: "courier.attachments"), localStorage: (any LocalStorage)? = nil) throws {
        try self.init(database: database, directory: directory, remoteStorage: remoteStorage, errorHandler: errorHandler, options: options,
                      transport: transport, downloader: downloader, logger: logger, localStorage: localStorage, watchedAttachments: nil)
    }

    /// The initializer; `watchedAttachments`: what ``startSync()`` reconciles (PowerSync's
    /// initializer gives it).
    init(database: any DatabaseWriter, directory: URL, remoteStorage: any RemoteStorage, errorHandler: (any SyncErrorHandler)?,
         options: AttachmentQueueOptions, transport: (any HTTPTransport)? = nil, downloader: Downloader? = nil,
         logger: Logger = Logger(label: "courier.attachments"), localStorage: (any LocalStorage)? = nil, watchedAttachments: WatchedSource?) throws {
        self.watchedSource = watchedAttachments
        let shared = downloader
        self.writer = MappedWriter(database)
        self.directory = directory.standardizedFileURL
        self.localStorage = try localStorage ?? FileSystemLocalStorage(directory: directory)
        self.options = options
        self.table = try AttachmentTable(name: options.tableName)
        self.storage = remoteStorage
        self.errorHandler = errorHandler
        self.logger = logger
        do { try table.migrator().migrate(database) } catch {
            throw CourierError(.database, "cannot create the attachments table", underlying: error)
        }
        let store = try shared?.database ?? CourierDatabase(writer: database)
        engineDatabase = store
        ownsDownloader = shared == nil
        let prefix = try shared?.relativePrefix(of: self.localStorage.stagingDirectory) ?? ""
        enginePrefix = prefix
        if let resumable = remoteStorage as? any ResumableRemoteStorage {
            var config = DownloaderConfiguration(rootDirectory: self.localStorage.stagingDirectory)
            config.retryPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(5), maxAttempts: 3)
            config.maxConcurrentDownloads = max(1, options.maxConcurrentTransfers)
            config.freeSpaceReserve = 16 << 20
            options.downloadConfiguration?(&config)
            let writer = MappedWriter(database), table = self.table
            let link = Credentials.storage(resumable) { record in
                let id = String(record.id.dropFirst("attachment:".count))
                let path = record.localFinalPath.hasPrefix(prefix) ? String(record.localFinalPath.dropFirst(prefix.count)) : record.localFinalPath
                return try await writer.read { db in try table.fetch(db, id: id) } ?? Attachment(id: id, filename: path, state: .queuedDownload)
            }
            let engine = shared ?? Downloader(configuration: config, database: store, transportOrDefault: transport, logger: logger)
            try store.adoptFeatureRecords(idPrefix: Self.downloadID(""), pathPrefix: prefix)   // made with a downloader of the queue's own
            try engine.routeCredentials(forIDsWithPrefix: Self.downloadID(""), urlRefresher: link, requestAuthorizer: link)
            self.downloader = engine
        } else {
            self.downloader = nil
        }
    }

    // MARK: Starting and stopping

    /// Starts syncing: verifies the local files (``verifyAttachments()``), reconciles each emission of
    /// `watched` (the app's query of referenced attachment ids), syncs on every local
    /// change to the queue, and every ``AttachmentQueueOptions/syncInterval``.
    public func startSync<S: AsyncSequence & Sendable>(watching watched: S) async throws where S.Element == [WatchedAttachmentItem] {
        try await startCommon()
        watch(watched)
    }

    /// Reconciles each emission of `watched` until syncing stops.
    private func watch<S: AsyncSequence & Sendable>(_ watched: S) where S.Element == [WatchedAttachmentItem] {
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

    /// Starts syncing: with the watched attachments PowerSync's initializer was given,
    /// as ``startSync(watching:)`` does; without, uploads and deletes (and the reconciling
    /// the app does with ``reconcile(_:)``).
    public func startSync() async throws {
        try await startCommon()
        if let watchedSource { watch(watchedSource()) }
    }

    func startCommon() async throws {
        stopped = false
        try await verifyAttachments()
        await abortAbandonedUploads()
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
        if ownsDownloader { await downloader?.shutdown() }
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

    /// The local file of an attachment, when it has one and the local storage keeps plain
    /// files (``LocalStorage/plainFileURL(_:)``).
    public nonisolated func localURL(for attachment: Attachment) -> URL? {
        attachment.localURI.flatMap { localStorage.plainFileURL($0) }
    }

    // MARK: Syncing

    /// Failures in a row per attachment id (for tests and diagnostics); a success and
    /// ``notifyNetworkAvailable()`` reset them.
    public var failureCounts: [String: Int] { failures }

    /// Why each attachment still queued is: its last transfer's error, as a code with words
    /// (a success, an archive and ``clearQueue()`` forget it). What `attachments sync` prints.
    public var pendingReasons: [String: CourierError] { lastErrors }

    static func downloadID(_ attachmentID: String) -> String { "attachment:" + attachmentID }
}
