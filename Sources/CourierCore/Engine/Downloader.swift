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
    let context: EngineContext
    let ownsTransport: Bool

    struct Adopted: Equatable { var priority: Int; var createdAt: Date }
    enum Intent {
        /// `yield`: a stop another process made, seen here: the run ends as the record says,
        /// writing nothing.
        case pause, cancel, shutdown, handOff, yield
        /// Which of two stops asked for wins.
        var rank: Int {
            switch self {
            case .yield: return -1
            case .shutdown: return 0
            case .handOff: return 1
            case .pause: return 2
            case .cancel: return 3
            }
        }
    }

    /// Downloads this process wants to run: queued or running.
    var adopted: [String: Adopted] = [:]
    /// The adopted downloads in scheduling order, the next to run last.
    var waiting: [(id: String, entry: Adopted)] = []
    /// A running download: the cancellable run, and the supervisor that records how it
    /// ended. The supervisor is never cancelled, so its database writes always happen.
    struct Running { var run: Task<RunOutcome, Never>; var supervisor: Task<Void, Never> }
    var running: [String: Running] = [:]
    var intents: [String: Intent] = [:]
    /// Full URLs (with query secrets) given to this process; the records store them redacted.
    var liveURLs: [String: String] = [:]
    /// Downloads whose partial file a hand-off made whole: their next run only finishes them.
    var wholePartials: Set<String> = []
    /// Hand-off steps waiting for the one under way, per download (`serialized`).
    let handOffSteps = TurnsByKey()
    /// The system's progress of each handed-off download this process follows.
    var handOffProgress: [String: HandOffProgress] = [:]
    /// Holds in force (``holdQueue()``): while any is, nothing new starts.
    var queueHolds = 0
    /// Whether ``shutdown()`` ran: nothing new starts.
    public internal(set) var isShutDown = false
    /// Whether the scheduler pages through the database's queue (after
    /// ``resumePendingDownloads(includePaused:includeFailed:)``) instead of only what was adopted.
    var drainsQueue = false
    var refilling = false
    /// Downloads stopped here (cancelled, paused, handed off) while a page of the queue was
    /// being read: that page, read before the stop, does not bring them back. Found by the
    /// simulator (seed 2266592348): a cancel right after a relaunch found no run, the page
    /// came in during its step, and the run it launched sent requests after the cancel said done.
    var stoppedWhileRefilling: Set<String> = []
    /// Failed reads of the queue in a row.
    var refillFailures = 0
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// The supervisors of runs whose end is being recorded (``runEnded(_:_:)``: no longer in
    /// `running`), for ``shutdown()`` and ``resume(id:url:)`` to wait for.
    var endingRuns: [String: Task<Void, Never>] = [:]
    /// Callers of ``shutdown()`` after the first, waiting for it to be done.
    var shutdownWaiters: [CheckedContinuation<Void, Never>]? = nil

    /// Makes a downloader that speaks HTTP through `transport` (the app keeps it and shuts it
    /// down, after the downloader's ``shutdown()``: a request the transport cancels under a
    /// running download is a dropped connection, retried). `import Courier` adds an
    /// initializer without it, for the platform's default:
    /// URLSession on Apple platforms, AsyncHTTPClient elsewhere.
    /// - Parameters:
    ///   - configuration: the root directory and the engine's knobs.
    ///   - database: where records live (Courier's own file, or the app's database).
    ///   - transport: how to speak HTTP.
    ///   - urlRefresher: supplies fresh URLs for expiring links.
    ///   - requestAuthorizer: supplies headers (auth) at request time; never persisted.
    ///   - logger: where the engine logs; secrets are redacted.
    public init(configuration: DownloaderConfiguration, database: CourierDatabase, transport: any HTTPTransport,
                urlRefresher: (any URLRefreshing)? = nil, requestAuthorizer: (any RequestAuthorizing)? = nil,
                logger: Logger = Logger(label: "courier")) {
        self.init(configuration: configuration, database: database, transport: transport, owningTransport: false,
                  urlRefresher: urlRefresher, requestAuthorizer: requestAuthorizer, logger: logger)
    }

    /// Makes a downloader; `owningTransport`: ``shutdown()`` shuts the transport down too.
    package init(configuration: DownloaderConfiguration, database: CourierDatabase, transport: any HTTPTransport, owningTransport: Bool,
                 urlRefresher: (any URLRefreshing)?, requestAuthorizer: (any RequestAuthorizing)?, logger: Logger) {
        self.ownsTransport = owningTransport
        let hub = EventHub(tap: configuration.eventTap)
        self.context = EngineContext(configuration: configuration, database: database, transport: transport,
                                     refresher: urlRefresher, authorizer: requestAuthorizer, logger: logger, hub: hub,
                                     ticker: ProgressTicker(hub: hub, interval: configuration.progressEventInterval, clock: configuration.clock),
                                     owner: configuration.leaseOwner ?? LeaseOwner.make())
    }

    /// The transport every request of this downloader goes through; the feature targets
    /// (attachments, media, documents) send their own calls through it too.
    public nonisolated var transport: any HTTPTransport { context.transport }

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
    func requeuePending(_ includePaused: Bool, _ includeFailed: Bool, listingIDs: Bool) async throws -> (ids: [String], count: Int) {
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

    /// Resumes one download: paused, failed, queued or interrupted. A completed one whose
    /// final file is missing downloads again.
    /// - Parameters:
    ///   - id: the download's id.
    ///   - url: the full URL again, for a download whose stored URL had its secrets
    ///     redacted (after a relaunch); secrets aside it must be the stored URL.
    public func resume(id: String, url: String? = nil) async throws {
        try checkOpen()
        // A stop under way (a pause recorded, its run not yet gone): resumed once it has
        // ended, not dropped as "already running".
        if let current = running[id], intents[id] != nil {
            await current.supervisor.value
        }
        // Nothing starts here until the requeue is written: a run launched meanwhile was
        // stopped by the requeue over its claim, the download left queued with no run (seed
        // 30000637), or ended paused while this returned as if it ran (ResumeSimulationTests).
        holdQueue()
        defer { releaseQueue() }
        let record = try await settledRecord(id)
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
                r.requeue(keeping: 0, freshStart: true); r.resetToZero(countingAttempt: false)
            }
        }
        let partialLength = try await context.database.keptBytes(id: id, partial: context.fileURL(record.partialPath))
        guard let updated = try await context.database.update(id: id, ifStateIn: [.queued, .downloading, .paused, .failed], lease: context.owner, {
            $0.requeue(keeping: partialLength, freshStart: true)
        }) else {
            if record.state == .handedOff { throw CourierError(.invalidState, "download \(id) is handed off to the system; take it back first (BackgroundTransfers.takeBack)") }
            // Another process renewed its lease between the check above and this update.
            if let now = try await context.database.record(id: id), context.owner.isBlocked(by: now) { throw Self.leasedError(now) }
            throw CourierError(.invalidState, "download \(id) cannot be resumed now")
        }
        context.hub.publish(.stateChanged(id: id, state: .queued, error: nil))
        adopt(updated)
        pump()
    }

    /// Pauses a download: the partial file and the record stay, and ``resume(id:url:)`` goes on
    /// from the kept bytes. Returns once the state is persisted. Throws ``CourierError/Code/notFound``
    /// when there is no such download, also when it was cancelled while it ran here (its final event says `cancelled`).
    public func pause(id: String) async throws {
        wholePartials.remove(id)
        var announced = false
        if await stopRunning(id, .pause) {
            // Stopped here. Its record gone: another process cancelled it meanwhile (this said
            // paused over a download that no longer existed). Queued or downloading: another
            // process took it over meanwhile, and it is paused there as below (this paused
            // only its own stale run while the download went on). Both found by the simulator.
            guard let state = try await recordAfterStoppedPause(id)?.state, state == .queued || state == .downloading else { return }
            announced = true
        }
        let record = try await storedRecord(id)
        guard !record.state.isTerminal else { return }
        if record.state == .handedOff {
            // The hand-off ends here: whatever the system's task brings later is not used.
            let paused = try await serialized(id) { try await endHandOffKeeping(id, { kept in { $0.pause(keeping: kept) } }) }
            if paused != nil { context.hub.publish(.ended(id: id, .paused(nil))); return }
            return try await pause(id: id)   // the hand-off ended while this waited: pause what it became
        }
        let length = try await context.database.keptBytes(id: id, partial: context.fileURL(record.partialPath))
        // Running in another process: its lease stays until that run sees the pause (a claim in between made two writers of one partial; the simulator),
        // also over a record an earlier pause left paused with that lease (a second pause dropped it: seed 3194186363).
        let owner = context.owner
        guard try await context.database.update(id: id, ifStateIn: [.queued, .downloading, .paused], { $0.pause(keeping: length, leaseKept: owner.isBlocked(by: $0)) }) != nil else { return }
        // A run launched here while this waited (the queue's page, read before the pause,
        // came in): stopped as a pause, its end announces it. Found by the simulator: right
        // after a relaunch's start(), the pause said done and the download went on.
        if await stopRunning(id, .pause) {
            announced = true
            _ = try await recordAfterStoppedPause(id)   // a cancel asked meanwhile won (its rank is higher): as above
        }
        if !announced { context.hub.publish(.ended(id: id, .paused(nil))) }
    }

    /// The record of download `id` once a run of it here was stopped as a pause; nil when it
    /// cannot be read (the run's own end stands). Throws ``CourierError/Code/notFound`` when a
    /// cancel won meanwhile and the record is gone.
    private func recordAfterStoppedPause(_ id: String) async throws -> DownloadRecord? {
        switch await context.bestEffort("reading the record", id: id, { try await context.database.record(id: id) }) {
        case .some(.none): throw CourierError(.notFound, "download \(id) was cancelled while it was being paused")
        case let .some(.some(record)): return record
        case .none: return nil
        }
    }

    /// Cancels a download: its partial file and its record are deleted. A completed
    /// download's final file is left alone. Returns once both are gone.
    public func cancel(id: String) async throws {
        wholePartials.remove(id)
        // Nothing starts here until the record is gone: a page of the queue read before could
        // launch it between the stop and the delete (seed 2266592348; its next page too).
        holdQueue()
        defer { releaseQueue() }
        if await stoppedRunCancelled(id) { return }
        let stoppedRun = try await serialized(id) {
            // An adopted hand-off may have started it while this waited for its step.
            if await stoppedRunCancelled(id) { return true }
            let record = try await storedRecord(id)
            closeHandOffProgress(id)
            let partial = context.fileURL(record.partialPath)
            await context.deletePartial(partial, id: id)
            try await context.database.delete(id: id)
            // Again: a run in another process may have named a small download's unnamed partial
            // in between (it checks the record after naming; this catches a name given before).
            await context.deletePartial(partial, id: id)
            return false
        }
        if !stoppedRun { context.hub.publish(.ended(id: id, .cancelled)) }
    }

    /// Whether download `id` ran here and its run, stopped, ended cancelled (its record
    /// gone). A run past its point of no return (the file in place, the record being
    /// completed) ends as it would have: the cancel then goes on as for any ended download.
    private func stoppedRunCancelled(_ id: String) async -> Bool {
        guard await stopRunning(id, .cancel) else { return false }
        // Unreadable: the run's own end stands (it was announced).
        let left = await context.bestEffort("reading the record", id: id) { try await context.database.record(id: id) }
        return left.map { $0 == nil } ?? true
    }

    /// The stored record, or ``CourierError/Code/notFound``.
    func storedRecord(_ id: String) async throws -> DownloadRecord {
        guard let record = try await context.database.record(id: id) else { throw CourierError(.notFound, "no download with id \(id)") }
        return record
    }

    /// The record with this id.
    public func record(id: String) async throws -> DownloadRecord? {
        try await context.database.record(id: id)
    }

    /// Ids running right now.
    public var runningIDs: Set<String> { Set(running.keys) }

    /// Stops every running download, leaving each resumable (queued, with its partial), and
    /// releases the HTTP client. The downloader cannot be used afterwards.
    public func shutdown() async {
        guard !isShutDown else {
            // A second caller returns when the first one's shutdown is done, not before.
            if shutdownWaiters != nil { await withCheckedContinuation { shutdownWaiters?.append($0) } }
            return
        }
        isShutDown = true
        shutdownWaiters = []
        // Downloads waiting their turn end too: queued, to resume at the next start.
        for id in adopted.keys where running[id] == nil { context.hub.publish(.ended(id: id, .shutDown)) }
        adopted.removeAll()
        waiting.removeAll()
        let tasks = running
        for (id, task) in tasks {
            // A pause, cancel or hand-off already asked for stands: it is what the app wanted.
            if intents[id] == nil { intents[id] = .shutdown }
            task.run.cancel()
        }
        for task in tasks.values { await task.supervisor.value }
        // Runs that had already ended and were still recording it (no longer in `running`):
        // their final event comes before the streams end, their record is written before
        // this returns.
        while let ending = endingRuns.values.first { await ending.value }
        wakeIdleWaiters()
        if ownsTransport { try? await context.transport.shutdown() }   // shutting down: nothing is waiting for the client any more
        context.hub.finishAll()
        let waiters = shutdownWaiters ?? []
        shutdownWaiters = nil
        for waiter in waiters { waiter.resume() }
    }

    static func leasedError(_ record: DownloadRecord) -> CourierError {
        CourierError(.leased, "download \(record.id) is running in another process (\(record.leaseOwner ?? "unknown")); it is left to that one")
    }

    func checkOpen() throws {
        if isShutDown { throw CourierError(.invalidState, "the downloader was shut down") }
    }
}
