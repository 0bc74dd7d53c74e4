import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging

/// Background transfers: every unfinished download (running or queued) handed to the system
/// when the app is about to be suspended, and what the system fetched adopted by the engine. An app drives it
/// through ``AppLifecycle``, which hands off when the scene becomes `.inactive`
/// (``AppLifecycle/handOffPhase``), takes back at `.active`, recovers at launch and passes
/// the system's background events on:
///
/// ```swift
/// // once, at launch (and when iOS relaunches the app for the session's events):
/// let transfers = BackgroundTransfers(downloader: downloader,
///                                     configuration: BackgroundTransfers.backgroundConfiguration(identifier: "app.courier"))
/// try await transfers.recover()                       // adopt what arrived while the app was gone
/// await transfers.handOffAll()                        // when the scene becomes .inactive
/// await transfers.takeBack()                          // .active again
/// // UIApplicationDelegate.application(_:handleEventsForBackgroundURLSession:completionHandler:):
/// transfers.systemEventsHandler(completionHandler)      // on the main thread, where UIKit calls it
/// ```
///
/// A hand-off asks for `Range: bytes=<kept>-` with `If-Range` in a URLSession *download*
/// task whose `taskDescription` is the download's id; the store records the hand-off
/// (`HandOffRecord`), so a relaunch knows what each task was. The task's file is judged
/// by `Downloader.adoptHandOff(id:status:headers:body:)` exactly as a streamed reply is,
/// and the engine's normal run verifies, syncs and renames the result. A task that fails
/// or is cancelled, or a download taken back, goes on in the engine from the kept bytes:
/// the two never write the same file, because a hand-off ends once. While a download is
/// away, its task's progress reaches the engine's events and the stored record
/// (`HandOffProgress`). Coming back keeps what the system fetched (``takeBack()``).
///
/// Everything here is portable and tested on Linux with a default configuration standing
/// in for the background one; only ``backgroundConfiguration(identifier:policies:)`` is
/// Apple's alone (`BackgroundTransfers+Darwin.swift`).
public final class BackgroundTransfers: NSObject, @unchecked Sendable { // immutable after init; mutable state is locked
    /// The engine whose downloads are handed off.
    public let downloader: Downloader
    let stash: HandOffStash
    let logger: Logger
    let handsOffCredentials: Bool
    private(set) var session: URLSession!   // set once in init: the session needs `self` as its delegate
    let state = Locked(State())
    /// The features whose uploads are handed off with ``handOffUploads()``.
    let uploaders = Locked<[any BackgroundUploading]>([])
    /// The background sessions' identifiers in use in this process.
    static let identifiers = Locked<Set<String>>([])

    struct State {
        /// The tasks this process made or found, by download id.
        var tasks: [String: URLSessionDownloadTask] = [:]
        /// Where each task's progress goes.
        var progress: [String: HandOffProgress] = [:]
        /// Ids whose task ``takeBack()`` is cancelling: its end is not the task's to report.
        var replacing: Set<String> = []
        /// Ids whose task's file arrived (so its completion does not take the download back).
        var arrived: Set<String> = []
        /// Ids whose current task was made from resume data.
        var resumed: Set<String> = []
        /// The system's relaunch handler, called once its events are delivered (each arrived
        /// file kept before its event returned).
        var eventsHandler: MainThreadHandler?
        /// The session delivered its events before the app gave the handler.
        var eventsDelivered = false
        /// Adoptions under way, so ``takeBack()`` returns after them.
        var adopting: [String: Task<Void, Never>] = [:]
        var actsOnEvents = true
        /// Between ``handOffAll(among:)`` / ``handOff(id:)`` / ``handOffUploads(_:)`` and
        /// ``takeBack()``: the app is away.
        var inBackground = false
        /// ``invalidate()`` ran: no task may be made on the session any more.
        var invalidated = false
        var handOffRetries: [String: Int] = [:]
        var finishShare = 0.5
        var lastKeepDuration: Duration?
        /// Upload pieces' tasks, by task description (`UploadHandOffPiece.taskID`).
        var uploadTasks: [String: URLSessionTask] = [:]
        /// Bytes each upload piece's task has sent, and when each upload's progress was last told.
        var uploadSent: [String: Int64] = [:]
        var uploadToldAt: [String: ContinuousClock.Instant] = [:]
    }

    /// Gives the handler iOS passes to
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`: it is called
    /// on the main queue once the session has delivered every event (each arrived file is
    /// kept before its event returns; adoption goes on after), at once if that already
    /// happened. Call it on the main thread, as UIKit does.
    public func systemEventsHandler(_ handler: @escaping () -> Void) {
        let wrapped = MainThreadHandler(call: handler)
        let delivered = state.withLock { s -> Bool in
            if s.eventsDelivered { s.eventsDelivered = false; return true }
            s.eventsHandler = wrapped
            return false
        }
        if delivered { finishSystemEvents(wrapped) }
    }

    /// UIKit's completion handler, which is not `Sendable`: it is only ever called on the
    /// main queue, where UIKit gave it.
    struct MainThreadHandler: @unchecked Sendable {
        let call: () -> Void
    }

    /// Calls the system's handler on the main queue once the upload pieces' ends are
    /// recorded, not waiting for the downloads' adoptions: every file the session delivered
    /// is already kept (moved out of the system's place, synced, its head written) before
    /// its delegate call returned, so it is safe. The adoptions go on meanwhile; one the
    /// suspension interrupts is done again at the next launch (``recover()``), from the
    /// kept file.
    func finishSystemEvents(_ handler: MainThreadHandler) {
        // An upload piece's end is one short write (the server's confirmation): waited for,
        // so a suspension cannot lose what only the delegate saw.
        let uploads = state.withLock { $0.adopting.filter { $0.key.hasPrefix(UploadHandOffPiece.taskPrefix) }.map(\.value) }
        guard !uploads.isEmpty else { return DispatchQueue.main.async { handler.call() } }
        Task {
            for end in uploads { await end.value }
            DispatchQueue.main.async { handler.call() }
        }
    }

    /// False: the delegate still keeps a task's file (as it must before returning) but acts
    /// on nothing, neither adopting nor giving back; tests play a kill this way.
    @_spi(Testing) public var actsOnEvents: Bool {
        get { state.withLock { $0.actsOnEvents } }
        set { state.withLock { $0.actsOnEvents = newValue } }
    }

    /// How long keeping the last arrived file took (moved and synced, its head written):
    /// what stands between the system's delivery and its completion handler.
    @_spi(Testing) public var lastKeepDuration: Duration? { state.withLock { $0.lastKeepDuration } }

    /// Makes the hand-off session.
    /// - Parameters:
    ///   - downloader: the engine.
    ///   - configuration: ``backgroundConfiguration(identifier:policies:)`` on Apple platforms; any
    ///     other configuration runs the same code with tasks that stop with the process.
    ///   - stashDirectory: where arrived files wait (default: `.courier-handoff` in the
    ///     downloader's root, on the same volume as the partial files).
    ///   - handsOffCredentials: whether downloads whose request authorizer adds headers
    ///     (`Authorization`…) are handed off with them. Off by default: a background session
    ///     follows redirects without asking the delegate, so the engine's rule that credentials
    ///     go only to the download's own origin cannot hold there, and Apple reserves the
    ///     `Authorization` header of a request. Such downloads stay with the engine.
    ///   - logger: where hand-offs, adoptions and give-backs are logged.
    public init(downloader: Downloader, configuration: URLSessionConfiguration = .default, stashDirectory: URL? = nil,
                handsOffCredentials: Bool = false, logger: Logger = Logger(label: "courier.background")) {
        self.downloader = downloader
        self.handsOffCredentials = handsOffCredentials
        self.stash = HandOffStash(folder: stashDirectory ?? downloader.configuration.rootDirectory.appendingPathComponent(".courier-handoff"))
        self.logger = logger
        super.init()
        if let identifier = configuration.identifier, !Self.identifiers.withLock({ $0.insert(identifier).inserted }) {
            // Apple delivers a background session's events to one session per identifier.
            logger.error("a second BackgroundTransfers for the background session \(identifier): make one per process")
        }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    // MARK: Handing off

    /// Hands every unfinished download to the system: the running ones and those queued
    /// behind them, each as a download task, made in the engine's order (priority, then
    /// age), which is the order the system is given them in. Nothing new starts in the engine
    /// meanwhile. `ids`: only these (all when `nil`). Returns the ids handed off.
    @discardableResult
    public func handOffAll(among ids: Set<String>? = nil) async -> [String] {
        await handOffAll(among: ids, except: [])
    }

    /// ``handOffAll(among:)``, leaving `kept` with the engine (a continued-processing task
    /// carries them).
    @discardableResult
    func handOffAll(among ids: Set<String>?, except kept: Set<String>) async -> [String] {
        state.withLock { s in
            s.inBackground = true
            s.eventsDelivered = false   // a delivery before this hand-off is not this one's
        }
        await downloader.holdQueue()
        var handed: [String] = []
        do {
            for id in try await downloader.handOffOrder() where ids?.contains(id) ?? true && !kept.contains(id) {
                do {
                    if try await handOff(id: id) { handed.append(id) }
                } catch {
                    logger.warning("hand-off failed; the download stays with the engine: \(error)", metadata: ["id": "\(id)"])
                }
            }
        } catch {
            logger.warning("the downloads to hand off could not be listed: \(error)")
        }
        await downloader.releaseQueue()
        return handed
    }

    /// Hands download `id` to the system; false when there was nothing to hand off.
    @discardableResult
    public func handOff(id: String) async throws -> Bool {
        state.withLock { $0.inBackground = true }
        guard let request = try await downloader.handOff(id: id, allowingCredentials: handsOffCredentials) else { return false }
        guard let url = URL(string: request.url) else {
            try await downloader.takeBack(id: id, "the URL cannot be handed to URLSession")
            return false
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in request.headers + request.credentials { urlRequest.setValue(value, forHTTPHeaderField: name) }
        state.withLock { $0.progress[id] = request.progress }
        guard start(id: id, { $0.downloadTask(with: urlRequest) }) else {
            try await downloader.takeBack(id: id, "the background session was invalidated")
            return false
        }
        logger.info("handed off at \(request.keptBytes) bytes", metadata: ["id": "\(id)"])
        return true
    }

    /// Makes `id`'s task with `make` and starts it; false once ``invalidate()`` has run.
    /// `resumed`: made from the system's resume data (its file is read as such on arrival).
    func start(id: String, resumed: Bool = false, _ make: (URLSession) -> URLSessionDownloadTask) -> Bool {
        guard let task = makeTask(make) else { return false }
        task.taskDescription = id
        state.withLock { s in
            s.tasks[id] = task
            s.arrived.remove(id)
            if resumed { s.resumed.insert(id) } else { s.resumed.remove(id) }
        }
        task.resume()
        return true
    }

    /// A task made on the session, or `nil` once ``invalidate()`` has run. No task can be
    /// made on an invalidated session (Apple's documentation; FoundationNetworking traps:
    /// "Session invalidated"), and a hand-off retried from the delegate can meet an
    /// invalidation: the task is made under the lock `invalidate()` takes first, so the two
    /// cannot cross.
    func makeTask<Made: URLSessionTask>(_ make: (URLSession) -> Made) -> Made? {
        state.withLock { s in s.invalidated ? nil : make(session) }
    }

    // MARK: Coming back

    /// At launch (and after a relaunch by the system): adopts every file that arrived while
    /// the app was not running, keeps waiting for tasks the system still runs, and gives
    /// the engine back every hand-off whose task is gone. Returns the ids still handed off.
    @discardableResult
    public func recover() async throws -> [String] {
        let (live, liveUploads) = await liveTasks()
        try await recoverUploads(liveUploads)
        let ids = try await downloader.handedOffIDs()
        stash.discardAll(except: ids)
        var waiting: [String] = []
        for id in ids {
            if stash.arrival(id) == nil, let task = live[id] {
                let progress = try? await downloader.handOffProgress(id: id)   // a display only: none if the store cannot say
                state.withLock { $0.tasks[id] = task; $0.progress[id] = progress }
                waiting.append(id)
                continue
            }
            // Through the same queue as the delegate's steps for this download, so a file
            // the session delivers meanwhile is adopted once, never beside a take-back.
            await track(id) { transfers in
                if transfers.stash.arrival(id) != nil {
                    await transfers.adopt(id)
                } else {
                    transfers.stash.discard(id)
                    await transfers.giveBack(id, "the system's task is gone")
                }
            }.value
        }
        return waiting
    }

    /// Gives download `id` back to the engine (from its kept bytes), logging a failure.
    func giveBack(_ id: String, _ reason: String) async {
        do { try await downloader.takeBack(id: id, reason) } catch {
            logger.warning("giving the download back failed: \(error)", metadata: ["id": "\(id)"])
        }
    }

    /// Stops the session: running tasks are cancelled, each one's end giving its download
    /// back as a failed task's does, and no task is made on it again. For tests and tools;
    /// an app keeps its background session for the life of the process.
    public func invalidate() {
        state.withLock { s in
            s.inBackground = false   // no retry on the invalidated session
            s.invalidated = true     // and no task made on it (`makeTask`)
        }
        session.invalidateAndCancel()
        if let identifier = session.configuration.identifier { _ = Self.identifiers.withLock { $0.remove(identifier) } }
    }

    /// Adopts the arrived file of `id` (once), then deletes it.
    func adopt(_ id: String) async {
        guard let arrival = stash.arrival(id) else { return }
        do {
            let result = try await downloader.adoptHandOff(id: id, status: arrival.head.status, headers: arrival.head.httpHeaders, body: arrival.body,
                                                           resumedFromData: arrival.head.resumed ?? false)
            logger.info("adopted the system's reply \(arrival.head.status): \(result)", metadata: ["id": "\(id)"])
            stash.discard(id)
        } catch {
            // The engine goes on from the kept bytes rather than leave the download waiting.
            logger.warning("adopting the system's reply failed: \(error)", metadata: ["id": "\(id)"])
            stash.discard(id)
            await giveBack(id, "adopting the system's file failed")
        }
    }

    /// Whether `task` may still deliver a reply: running or suspended. (`.canceling` may
    /// never become `.completed` in Apple's account of it, and its end may have been
    /// reported already.)
    static func isLive(_ task: URLSessionTask) -> Bool { task.state == .running || task.state == .suspended }

    /// The session's tasks (a background session's survive the app): running downloads by
    /// id, upload pieces (running or ended) by task description.
    func liveTasks() async -> (downloads: [String: URLSessionDownloadTask], uploads: [String: URLSessionTask]) {
        let tasks: [URLSessionTask] = await withCheckedContinuation { done in session.getAllTasks { done.resume(returning: $0) } }
        var byID: [String: URLSessionDownloadTask] = [:]
        var uploads: [String: URLSessionTask] = [:]
        // A completed one is left out: its download is given back (or its file, if the
        // session delivered it first, adopted), never waited for.
        for task in tasks {
            guard let id = task.taskDescription else { continue }
            if id.hasPrefix(UploadHandOffPiece.taskPrefix) {
                uploads[id] = task   // ended ones too: their replies are judged at recovery
            } else if Self.isLive(task), let download = task as? URLSessionDownloadTask {
                byID[id] = download
            }
        }
        return (byID, uploads)
    }
}

#if canImport(FoundationNetworking)
extension BackgroundTransfers {
    /// FoundationNetworking has no background sessions: the default configuration, whose
    /// tasks end with the process (recover() then gives their downloads back to the engine).
    public static func backgroundConfiguration(identifier: String, policies: URLSessionTransport.Policies = .init()) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.allowsCellularAccess = policies.allowsCellularAccess
        return configuration
    }

    /// FoundationNetworking gives no resume data.
    static func resumeData(in error: any Error) -> Data? { nil }
}
#endif
