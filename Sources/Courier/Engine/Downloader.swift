import Foundation
import GRDB
import Logging

/// Courier's download engine: a scheduler over persisted records.
///
/// ```swift
/// let db = try CourierDatabase(path: ".../courier.sqlite")
/// let downloader = Downloader(configuration: .init(rootDirectory: documents), database: db)
/// try await downloader.start()                       // resumes what a relaunch left behind
/// try await downloader.enqueue(DownloadRequest(id: "doc_42", url: link, destination: "docs/42.pdf"))
/// for await event in downloader.events(for: "doc_42") { … }
/// ```
///
/// At most ``DownloaderConfiguration/maxConcurrentDownloads`` run at once, by priority then
/// age. Call ``shutdown()`` before dropping it; interrupted downloads stay resumable.
public actor Downloader {
    private let context: EngineContext
    private let ownsTransport: Bool

    private struct Adopted: Equatable { var priority: Int; var createdAt: Date }
    private enum Intent { case pause, cancel, shutdown }

    /// Downloads this process wants to run: queued or running.
    private var adopted: [String: Adopted] = [:]
    /// The adopted downloads in scheduling order, the next to run last.
    private var waiting: [(id: String, entry: Adopted)] = []
    /// A running download: the cancellable run, and the supervisor that records how it
    /// ended. The supervisor is never cancelled, so its database writes always happen.
    private struct Running { var run: Task<RunOutcome, Never>; var supervisor: Task<Void, Never> }
    private var running: [String: Running] = [:]
    private var intents: [String: Intent] = [:]
    /// Full URLs (with query secrets) given to this process; the records store them redacted.
    private var liveURLs: [String: String] = [:]
    private var isShutDown = false
    /// Whether the scheduler pages through the database's queue (after
    /// ``resumePendingDownloads(includePaused:includeFailed:)``) instead of only what was adopted.
    private var drainsQueue = false
    private var refilling = false

    /// Makes a downloader.
    /// - Parameters:
    ///   - configuration: the root directory and the engine's knobs.
    ///   - database: where records live (Courier's own file, or the app's database).
    ///   - transport: how to speak HTTP; AsyncHTTPClient by default.
    ///   - urlRefresher: supplies fresh URLs for expiring links.
    ///   - requestAuthorizer: supplies headers (auth) at request time; never persisted.
    ///   - logger: where the engine logs; secrets are redacted.
    public init(configuration: DownloaderConfiguration, database: CourierDatabase, transport: (any HTTPTransport)? = nil,
                urlRefresher: (any URLRefreshing)? = nil, requestAuthorizer: (any RequestAuthorizing)? = nil,
                logger: Logger = Logger(label: "courier")) {
        self.ownsTransport = transport == nil
        self.context = EngineContext(configuration: configuration, database: database, transport: transport ?? AsyncHTTPClientTransport(),
                                     refresher: urlRefresher, authorizer: requestAuthorizer, logger: logger, hub: EventHub(),
                                     owner: LeaseOwner.make())
    }

    /// The id this downloader writes into the leases of the records it runs.
    public nonisolated var leaseOwner: LeaseOwner { context.owner }

    /// The database the downloader uses.
    public nonisolated var database: CourierDatabase { context.database }

    /// The configuration.
    public nonisolated var configuration: DownloaderConfiguration { context.configuration }

    // MARK: Starting downloads

    /// Resumes queued and interrupted downloads when ``DownloaderConfiguration/autoResume``
    /// is on; call it at launch. Returns the ids it picked up.
    @discardableResult
    public func start() async throws -> [String] {
        guard context.configuration.autoResume else { return [] }
        return try await resumePendingDownloads()
    }

    /// Picks up every queued and interrupted (`downloading` at the last stop) record, the
    /// paused ones too when `includePaused`, and the failed ones when `includeFailed`, in
    /// one statement; records another live process leases are left to it. Returns the ids
    /// it queued. The records themselves are read a page at a time as downloads start, so
    /// a queue of thousands is never loaded whole.
    @discardableResult
    public func resumePendingDownloads(includePaused: Bool = false, includeFailed: Bool = false) async throws -> [String] {
        try await requeuePending(includePaused, includeFailed, listingIDs: true).ids
    }

    /// Requeues queued and interrupted records, plus paused and failed ones when asked, and
    /// lets the scheduler page through the queue.
    private func requeuePending(_ includePaused: Bool, _ includeFailed: Bool, listingIDs: Bool) async throws -> (ids: [String], count: Int) {
        try checkOpen()
        let states: [DownloadState] = [.queued, .downloading] + (includePaused ? [.paused] : []) + (includeFailed ? [.failed] : [])
        let result = try await context.database.requeue(states: states, owner: context.owner, excluding: Set(running.keys), listingIDs: listingIDs)
        drainsQueue = true
        pump()
        return result
    }

    /// ``resumePendingDownloads(includePaused:includeFailed:)`` for queues of any length:
    /// returns how many it queued instead of their ids, so not even the ids are loaded.
    @discardableResult
    public func resumeAllPending(includePaused: Bool = false, includeFailed: Bool = false) async throws -> Int {
        try await requeuePending(includePaused, includeFailed, listingIDs: false).count
    }

    /// Adds a download, or brings an existing one with the same id back to life: a paused,
    /// failed or interrupted one resumes; a completed one whose final file is gone or of the
    /// wrong size downloads again; a completed one whose file is in place is returned as is.
    /// Throws ``CourierError/Code/leased`` when another process runs it.
    @discardableResult
    public func enqueue(_ request: DownloadRequest) async throws -> DownloadRecord {
        let (record, disposition) = try await enqueueAll([request])[0]
        if disposition == .leasedElsewhere { throw Self.leasedError(record) }
        return record
    }

    /// What ``enqueue(batch:)`` did with one request.
    public enum EnqueueDisposition: Sendable, Equatable {
        /// Queued (new, or an existing record brought back).
        case queued
        /// Completed before, with its final file in place: nothing to do.
        case alreadyComplete
        /// Already running in this downloader.
        case alreadyRunning
        /// Another process holds its lease and runs it; left to that one.
        case leasedElsewhere
    }

    /// Adds many downloads in one database transaction (a list of thousands costs one
    /// commit, not thousands). Each request is validated first; an invalid one, or an id
    /// given twice, throws before anything is written.
    @discardableResult
    public func enqueue(batch requests: [DownloadRequest]) async throws -> [(record: DownloadRecord, disposition: EnqueueDisposition)] {
        try await enqueueAll(requests)
    }

    private struct Prepared: Sendable {
        var request: DownloadRequest
        var id: String
        var destination: String
        var partial: String
        var sha: String?
        var redactedURL: String
        var connections: Int
    }

    private func enqueueAll(_ requests: [DownloadRequest]) async throws -> [(record: DownloadRecord, disposition: EnqueueDisposition)] {
        try checkOpen()
        var seen = Set<String>()
        let prepared = try requests.map { request -> Prepared in
            let id = try SafePath.validateIdentifier(request.id)
            guard seen.insert(id).inserted else { throw CourierError(.invalidArgument, "the id \(id) is given twice") }
            _ = try URLPolicy.validate(request.url)
            let destination = try SafePath.validateRelative(request.destination)
            return Prepared(request: request, id: id, destination: destination, partial: destination + ".partial",
                            sha: try request.sha256.map(SHA256Hex.validate), redactedURL: Redactor.redact(url: request.url),
                            connections: max(1, min(request.connections ?? context.configuration.connectionsPerDownload, 16)))
        }
        let runningHere = Set(running.keys)
        let owner = context.owner
        let root = context.configuration.rootDirectory
        let upserts = try await context.database.write { db -> [Upsert] in
            try prepared.map { p in try Self.upsert(p, in: db, runningHere: runningHere, owner: owner, root: root) }
        }
        // Files go only once the rows that stopped claiming them are committed: a batch that
        // rolls back leaves every partial where it was.
        for path in upserts.flatMap(\.discard) { unlink(root.appendingPathComponent(path).path) }
        let results = upserts.map { (record: $0.record, disposition: $0.disposition) }
        for (p, result) in zip(prepared, results) where result.disposition == .queued {
            // The full URL (with its secrets) stays in this process only.
            liveURLs[p.id] = p.redactedURL != p.request.url ? p.request.url : nil
            context.hub.publish(.stateChanged(id: p.id, state: .queued, error: nil))
            adopt(result.record)
        }
        pump()
        return results
    }

    /// What one request did to its row, and the files (relative paths) to delete once the
    /// batch's transaction has committed.
    private struct Upsert {
        var record: DownloadRecord
        var disposition: EnqueueDisposition
        var discard: [String] = []
    }

    /// One request's row, inside the batch's transaction. Touches no file: what is to be
    /// deleted is returned.
    private static func upsert(_ p: Prepared, in db: Database, runningHere: Set<String>, owner: LeaseOwner, root: URL) throws -> Upsert {
        guard var existing = try DownloadRecord.fetchOne(db, key: p.id) else {
            var r = DownloadRecord(id: p.id, remoteUrl: p.redactedURL, localFinalPath: p.destination, partialPath: p.partial,
                                   mediaId: p.request.mediaId, mediaType: p.request.mediaType, expectedSHA256: p.sha, priority: p.request.priority)
            r.connections = p.connections
            try r.insert(db)
            return Upsert(record: r, disposition: .queued)
        }
        if runningHere.contains(p.id) { return Upsert(record: existing, disposition: .alreadyRunning) }
        if owner.isBlocked(by: existing) { return Upsert(record: existing, disposition: .leasedElsewhere) }
        var discard: [String] = []
        let final = root.appendingPathComponent(p.destination)
        // The finished file in place is this request's file: same place, same URL (secrets
        // aside, so a re-signed link is the same download), same checksum, whole.
        let finishedHere = existing.state == .completed && existing.localFinalPath == p.destination && existing.remoteUrl == p.redactedURL
            && (p.sha == nil || existing.expectedSHA256 == p.sha)
            && existing.totalBytes.map { PartialFile.length(at: final) == $0 && FileManager.default.fileExists(atPath: final.path) } == true
        if finishedHere, !p.request.revalidate {
            return Upsert(record: existing, disposition: .alreadyComplete)
        }
        if existing.partialPath != p.partial {
            discard.append(existing.partialPath)
        }
        // No unlink of the partial otherwise: the record's bytesReceived lags the file by up
        // to a second, and ResumePlan already discards kept bytes nothing ties to a version.
        // Another URL is another file: kept bytes of the old one are never spliced onto it.
        let fresh = existing.state == .completed || existing.localFinalPath != p.destination || existing.remoteUrl != p.redactedURL
            || existing.expectedSHA256 != (p.sha ?? existing.expectedSHA256)
        // Revalidating a finished file: its validators go with the request from zero; the
        // file stays until a new version replaces it (or a 304 keeps it).
        if finishedHere {
            existing.heldEtag = existing.etag; existing.heldLastModified = existing.lastModified; existing.heldBytes = existing.totalBytes
        } else if fresh {
            existing.heldEtag = nil; existing.heldLastModified = nil; existing.heldBytes = nil
        }
        existing.remoteUrl = p.redactedURL
        existing.localFinalPath = p.destination
        existing.partialPath = p.partial
        existing.mediaId = p.request.mediaId ?? existing.mediaId
        existing.mediaType = p.request.mediaType ?? existing.mediaType
        existing.expectedSHA256 = p.sha ?? existing.expectedSHA256
        existing.priority = p.request.priority
        existing.connections = p.connections
        existing.state = .queued
        existing.attemptCount = 0
        existing.lastErrorCode = nil
        existing.lastErrorMessage = nil
        existing.leaseOwner = nil
        existing.leaseExpiresAt = nil
        if fresh {
            existing.bytesReceived = 0; existing.etag = nil; existing.lastModified = nil; existing.totalBytes = nil; existing.resumable = true
            try Segment.filter(Segment.Columns.downloadId == p.id).deleteAll(db)
            discard.append(p.partial)
        }
        existing.updatedAt = Date()
        try existing.update(db)
        return Upsert(record: existing, disposition: .queued, discard: discard)
    }

    /// Resumes one download: paused, failed, queued or interrupted. A completed one whose
    /// final file is missing downloads again.
    /// - Parameters:
    ///   - id: the download's id.
    ///   - url: the full URL again, for a download whose stored URL had its secrets
    ///     redacted (after a relaunch); secrets aside it must be the stored URL.
    public func resume(id: String, url: String? = nil) async throws {
        try checkOpen()
        guard let record = try await context.database.record(id: id) else {
            throw CourierError(.notFound, "no download with id \(id)")
        }
        if let url {
            _ = try URLPolicy.validate(url)
            guard Redactor.redact(url: url) == record.remoteUrl else {
                throw CourierError(.invalidArgument, "that URL is not the URL of download \(id) (\(record.remoteUrl))")
            }
            if url != record.remoteUrl { liveURLs[id] = url }
        }
        if running[id] != nil { return }
        if context.owner.isBlocked(by: record) { throw Self.leasedError(record) }
        if record.state == .completed {
            let final = context.fileURL(record.localFinalPath)
            if let total = record.totalBytes, PartialFile.length(at: final) == total { return }
            _ = try await context.database.update(id: id, ifStateIn: [.completed]) { r in
                r.state = .queued; r.bytesReceived = 0; r.etag = nil; r.lastModified = nil; r.totalBytes = nil
            }
        }
        let partialLength = try await context.database.keptBytes(id: id, partial: context.fileURL(record.partialPath))
        guard let updated = try await context.database.update(id: id, ifStateIn: [.queued, .downloading, .paused, .failed], lease: context.owner, { r in
            r.state = .queued
            r.bytesReceived = partialLength
            r.leaseOwner = nil
            r.leaseExpiresAt = nil
            r.attemptCount = 0
            r.lastErrorCode = nil
            r.lastErrorMessage = nil
        }) else { throw CourierError(.invalidState, "download \(id) cannot be resumed now") }
        context.hub.publish(.stateChanged(id: id, state: .queued, error: nil))
        adopt(updated)
        pump()
    }

    /// Pauses a download: the partial file and the record stay, and ``resume(id:url:)`` goes on
    /// from the kept bytes. Returns once the state is persisted.
    public func pause(id: String) async throws {
        adopted[id] = nil
        if let task = running[id] {
            intents[id] = .pause
            task.run.cancel()
            await task.supervisor.value
            return
        }
        guard let record = try await context.database.record(id: id) else {
            throw CourierError(.notFound, "no download with id \(id)")
        }
        guard !record.state.isTerminal else { return }
        let length = try await context.database.keptBytes(id: id, partial: context.fileURL(record.partialPath))
        if try await context.database.update(id: id, ifStateIn: [.queued, .downloading, .paused], { r in
            r.state = .paused
            r.bytesReceived = length
        }) != nil {
            context.hub.publish(.stateChanged(id: id, state: .paused, error: nil))
        }
    }

    /// Cancels a download: its partial file and its record are deleted. A completed
    /// download's final file is left alone. Returns once both are gone.
    public func cancel(id: String) async throws {
        adopted[id] = nil
        if let task = running[id] {
            intents[id] = .cancel
            task.run.cancel()
            await task.supervisor.value
            return
        }
        guard let record = try await context.database.record(id: id) else {
            throw CourierError(.notFound, "no download with id \(id)")
        }
        unlink(context.fileURL(record.partialPath).path)
        try await context.database.delete(id: id)
        context.hub.publish(.cancelled(id: id))
    }

    /// The record with this id.
    public func record(id: String) async throws -> DownloadRecord? {
        try await context.database.record(id: id)
    }

    /// Ids running right now.
    public var runningIDs: Set<String> { Set(running.keys) }

    /// Whether nothing runs, nothing waits, and the database's queue holds nothing this
    /// downloader can take (records another process claimed are not its to wait for).
    public var isIdle: Bool { running.isEmpty && adopted.isEmpty && !drainsQueue && !refilling }

    /// Downloads held in memory to run (running or next in line): a page of the queue.
    var adoptedCount: Int { adopted.count }

    /// Waits until the download completes, and returns its record. Throws its error when
    /// it fails, ``CourierError/Code/paused`` when it pauses, and
    /// ``CourierError/Code/cancelled`` when it is cancelled.
    @discardableResult
    public nonisolated func waitForCompletion(id: String) async throws -> DownloadRecord {
        for await event in events(for: id) {
            switch event {
            case let .completed(record): return record
            case let .failed(_, error): throw error
            case .cancelled: throw CourierError(.cancelled, "download \(id) was cancelled")
            case let .stateChanged(_, _, error?) where error.code == .leased:
                throw error
            case let .stateChanged(_, .paused, error):
                throw error.map { CourierError(.paused, "download \(id) paused: \($0.description)") } ?? CourierError(.paused, "download \(id) was paused")
            default: continue
            }
        }
        throw CourierError(.cancelled, "the downloader shut down before download \(id) finished")
    }

    /// Stops every running download, leaving each resumable (queued, with its partial), and
    /// releases the HTTP client. The downloader cannot be used afterwards.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        adopted.removeAll()
        waiting.removeAll()
        let tasks = running
        for (id, task) in tasks {
            intents[id] = .shutdown
            task.run.cancel()
        }
        for task in tasks.values { await task.supervisor.value }
        if ownsTransport { try? await context.transport.shutdown() }
        context.hub.finishAll()
    }

    // MARK: Events

    /// The events of one download. It first yields the persisted progress and state (and
    /// the final event at once, for a download that already ended), then live events, and
    /// finishes after a final event.
    public nonisolated func events(for id: String) -> AsyncStream<DownloadEvent> {
        let hub = context.hub
        let (key, stream, tombstone) = hub.subscribe(id: id)
        if let tombstone {
            hub.seed(key, with: [tombstone])
            return stream
        }
        let database = context.database
        Task {
            var snapshot: [DownloadEvent] = []
            if let record = try? await database.record(id: id) {
                snapshot.append(.progress(DownloadProgress(id: id, bytesReceived: record.bytesReceived, totalBytes: record.totalBytes)))
                switch record.state {
                case .completed: snapshot.append(.completed(record))
                case .failed: snapshot.append(.failed(id: id, error: record.lastError ?? CourierError(.invalidState, "failed")))
                default: snapshot.append(.stateChanged(id: id, state: record.state, error: record.lastError))
                }
            }
            hub.seed(key, with: snapshot)
        }
        return stream
    }

    /// The events of every download, live, until ``shutdown()``. The stream buffers without
    /// bound (no final event is ever dropped), so keep consuming it.
    public nonisolated func events() -> AsyncStream<DownloadEvent> {
        context.hub.subscribeAll()
    }

    // MARK: Scheduling

    private func adopt(_ record: DownloadRecord) {
        let entry = Adopted(priority: record.priority, createdAt: record.createdAt)
        adopted[record.id] = entry
        // Keep `waiting` sorted with the next to run last: a binary search, not a scan of
        // every adopted download at each scheduling step (thousands queued by `get -i`).
        var low = 0, high = waiting.count
        while low < high {
            let mid = (low + high) / 2
            if Self.runsBefore((waiting[mid].entry, waiting[mid].id), (entry, record.id)) { high = mid } else { low = mid + 1 }
        }
        waiting.insert((record.id, entry), at: low)
    }

    /// Priority first, then age, then id.
    private static func runsBefore(_ a: (Adopted, String), _ b: (Adopted, String)) -> Bool {
        if a.0.priority != b.0.priority { return a.0.priority > b.0.priority }
        if a.0.createdAt != b.0.createdAt { return a.0.createdAt < b.0.createdAt }
        return a.1 < b.1
    }

    private func pump() {
        guard !isShutDown else { return }
        let limit = max(1, context.configuration.maxConcurrentDownloads)
        while running.count < limit, let next = waiting.popLast() {
            // Entries are dropped lazily: paused, cancelled or already running ones are skipped.
            guard let entry = adopted[next.id], entry.priority == next.entry.priority, entry.createdAt == next.entry.createdAt,
                  running[next.id] == nil else { continue }
            launch(next.id)
        }
        if drainsQueue, adopted.count - running.count < limit { refill() }
    }

    /// Reads the next page of the database's queue into `adopted` (a few times the
    /// concurrency), so a long queue costs memory for a page, not for every record.
    private func refill() {
        guard !refilling, !isShutDown else { return }
        refilling = true
        let limit = max(8, max(1, context.configuration.maxConcurrentDownloads) * 4)
        let exclude = Set(adopted.keys).union(running.keys)
        let database = context.database, owner = context.owner
        Task {
            let page = (try? await database.nextQueued(limit: limit, excluding: exclude, owner: owner)) ?? []
            self.refilled(page)
        }
    }

    private func refilled(_ page: [DownloadRecord]) {
        refilling = false
        if page.isEmpty { drainsQueue = false; return }
        for record in page where adopted[record.id] == nil && running[record.id] == nil { adopt(record) }
        pump()
    }

    private func launch(_ id: String) {
        let run = DownloadRun(id: id, context: context, liveURL: liveURLs[id],
                              limiter: context.configuration.maxBytesPerSecond.map { RateLimiter(bytesPerSecond: $0) })
        let runTask = Task { await run.run() }
        let supervisor = Task {
            let outcome = await runTask.value
            await self.runEnded(id, outcome)
        }
        running[id] = Running(run: runTask, supervisor: supervisor)
    }

    private func runEnded(_ id: String, _ outcome: RunOutcome) async {
        running[id] = nil
        adopted[id] = nil
        let intent = intents.removeValue(forKey: id)
        let hub = context.hub
        let db = context.database
        defer { pump() }
        // However the run ended, a lease still held by this downloader is released first, so
        // a waiter that exits on the final event leaves no lease behind.
        if outcome.releasesLease { try? await db.releaseLease(id: id, owner: context.owner) }
        switch outcome {
        case let .completed(record):
            hub.publish(.stateChanged(id: id, state: .completed, error: nil))
            hub.publish(.completed(record))
        case let .failed(error):
            hub.publish(.stateChanged(id: id, state: .failed, error: error))
            hub.publish(.failed(id: id, error: error))
        case let .paused(error):
            hub.publish(.stateChanged(id: id, state: .paused, error: error))
        case .interrupted:
            let record = try? await db.record(id: id)
            let partial = record.map { context.fileURL($0.partialPath) }
            var kept: Int64 = 0
            if let partial { kept = (try? await db.keptBytes(id: id, partial: partial)) ?? PartialFile.length(at: partial) }
            let length = kept
            switch intent {
            case .cancel:
                liveURLs[id] = nil
                if let partial { unlink(partial.path) }
                _ = try? await db.delete(id: id)
                hub.publish(.cancelled(id: id))
            case .pause:
                _ = try? await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { r in
                    r.state = .paused; r.bytesReceived = length; r.leaseOwner = nil; r.leaseExpiresAt = nil
                }
                hub.publish(.progress(DownloadProgress(id: id, bytesReceived: length, totalBytes: record?.totalBytes)))
                hub.publish(.stateChanged(id: id, state: .paused, error: nil))
            case .shutdown, nil:
                _ = try? await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { r in
                    r.state = .queued; r.bytesReceived = length; r.leaseOwner = nil; r.leaseExpiresAt = nil
                }
            }
        case .leasedElsewhere:
            let record = try? await db.record(id: id)
            hub.publish(.stateChanged(id: id, state: record?.state ?? .downloading,
                                      error: record.map(Self.leasedError) ?? CourierError(.leased, "download \(id) is running elsewhere")))
        case .stoppedExternally:
            if let record = try? await db.record(id: id) {
                hub.publish(.stateChanged(id: id, state: record.state, error: record.lastError))
                if record.state == .completed { hub.publish(.completed(record)) }
            } else {
                hub.publish(.cancelled(id: id))
            }
        }
    }

    static func leasedError(_ record: DownloadRecord) -> CourierError {
        CourierError(.leased, "download \(record.id) is running in another process (\(record.leaseOwner ?? "unknown")); it is left to that one")
    }

    private func checkOpen() throws {
        if isShutDown { throw CourierError(.invalidState, "the downloader was shut down") }
    }
}
