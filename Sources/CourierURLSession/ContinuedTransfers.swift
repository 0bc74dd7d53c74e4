import CourierCore
import Foundation
import Logging

/// The system's side of continued processing: `BGTaskScheduler` on iOS 26
/// (`BackgroundTaskContinuedProcessing`), a scripted fake in tests.
public protocol ContinuedProcessingSystem: Sendable {
    /// Asks the system to run a task now, from the foreground; throws when it refuses (an
    /// older system, an identifier not in the app's Info.plist, the system's own limits).
    /// `run` receives the task once the system starts it.
    func submit(identifier: String, title: String, subtitle: String, run: @escaping @Sendable (any ContinuedProcessingTask) -> Void) throws
}

/// One running continued-processing task, as Courier uses it.
public protocol ContinuedProcessingTask: AnyObject, Sendable {
    /// Shows progress on the system's UI (bytes).
    func report(completed: Int64, total: Int64)
    /// Ends the task (`setTaskCompleted(success:)`).
    func end(success: Bool)
    /// `handler` runs once when the system expires the task (its time is up, or the person
    /// cancelled it from the system's UI).
    func onExpiry(_ handler: @escaping @Sendable () -> Void)
}

/// Keeps downloads and uploads the person started going after the app leaves the
/// foreground, with the system's own progress and cancel button (iOS 26's continued
/// processing), where a background session cannot carry them as they are (segmented
/// downloads over several connections, S3 parts and tus or draft appends sent from the app). Make it once, with the app's
/// ``AppLifecycle``; call ``begin(_:uploads:title:subtitle:)`` from the person's action.
///
/// While its task runs, the downloads it covers stay in the app's process at the hand-off
/// phase (the others go to the background session as before); the task ends when they
/// end, and the system's expiry hands them to the background session (or pauses them
/// without one), keeping what they hold. A system that refuses the task (before iOS 26, an
/// identifier missing from Info.plist) leaves the present hand-off in place.
/// The rules: ``ContinuedProcessingPlan``.
public final class ContinuedTransfers: Sendable {
    /// The app's lifecycle: its downloader and its background session.
    public let lifecycle: AppLifecycle
    /// The prefix of every task's identifier (`<bundle id>.<context>`; Info.plist lists it
    /// as `<prefix>.*` under `BGTaskSchedulerPermittedIdentifiers`).
    public let identifierPrefix: String
    private let system: any ContinuedProcessingSystem
    private let state = Locked(State())
    private let logger: Logger

    /// Every submitted task, and the outcome of those that ended before the system started them.
    private struct State {
        var runs: [String: Run] = [:]
        var endedEarly: [String: Bool] = [:]
        var covered: Set<String> { runs.values.reduce(into: Set<String>()) { $0.formUnion($1.plan.running) } }
        var coversUploads: Bool { runs.values.contains { !$0.plan.runningUploads.isEmpty } }
    }

    /// One submitted task: its plan, the task once started, and the watch on the events.
    private struct Run {
        var plan: ContinuedProcessingPlan
        var task: (any ContinuedProcessingTask)?
        var watch: Task<Void, Never>?
        var uploadWatch: Task<Void, Never>?
    }

    /// Makes the coordinator and tells `lifecycle` to leave covered downloads in the process.
    public init(lifecycle: AppLifecycle, system: any ContinuedProcessingSystem, identifierPrefix: String,
                logger: Logger = Logger(label: "courier.continued")) {
        self.lifecycle = lifecycle
        self.system = system
        self.identifierPrefix = identifierPrefix
        self.logger = logger
        lifecycle.keepInProcess(downloads: { [state] in state.withLock { $0.covered } }, uploads: { [state] in state.withLock { $0.coversUploads } })
    }

    /// The downloads a running (or submitted) task covers now.
    public var coveredIDs: Set<String> { state.withLock { $0.covered } }

    /// Asks the system to keep downloads `ids` and uploads `uploads` (the ids of their
    /// records, `attachment:<id>` for an attachment queue's) going past the foreground,
    /// showing `title` and `subtitle`. Call it from the person's action (a tap), in the
    /// foreground. Returns the task's identifier, or `nil` when nothing is left to cover
    /// (only queued and running downloads, and uploads with a record, are) or the system
    /// refused (everything then goes to the background session at the hand-off phase, as
    /// before). While a task covers an upload, the registered features' uploads all stay in
    /// the process at the hand-off phase.
    @discardableResult
    public func begin(_ ids: [String], uploads: [String] = [], title: String, subtitle: String) async -> String? {
        let downloader = lifecycle.downloader
        let events = downloader.events()   // before the records are read: nothing between is missed
        var downloads: [(id: String, received: Int64, total: Int64?)] = []
        for id in ids {
            guard let record = try? await downloader.record(id: id), [.queued, .downloading].contains(record.state) else { continue }   // unknown, or not running: not covered
            downloads.append((id, record.bytesReceived, record.totalBytes ?? record.expectedBytes))
        }
        var held: [(id: String, confirmed: Int64, size: Int64)] = []
        for id in uploads {
            guard let record = try? await downloader.database.upload(id: id)?.record else { continue }   // unknown or done: not covered
            held.append((id, record.confirmedBytes, record.sourceSize))
        }
        guard !downloads.isEmpty || !held.isEmpty else { return nil }
        let identifier = "\(identifierPrefix).\(UUID().uuidString.lowercased())"
        let watch = Task { [weak self] in
            for await event in events {
                guard let self, await self.apply(event, to: identifier) else { return }
            }
        }
        state.withLock { $0.runs[identifier] = Run(plan: ContinuedProcessingPlan(downloads, uploads: held), watch: watch) }
        if !held.isEmpty {   // once the run is there to watch
            let uploadWatch = Task<Void, Never> { [weak self] in await self?.watchUploads(identifier) }
            state.withLock { $0.runs[identifier]?.uploadWatch = uploadWatch }
        }
        do {
            try system.submit(identifier: identifier, title: title, subtitle: subtitle) { [weak self] task in
                guard let self else { return task.end(success: false) }
                self.started(identifier, task)
            }
        } catch {
            logger.info("the system refused continued processing; the downloads go to the background session as before: \(error)")
            await drop(identifier)
            return nil
        }
        Task { [weak self] in
            // A task the system accepted but never started (it is not known to do so) must
            // not keep its downloads in the process: dropped after a minute.
            try? await Task.sleep(for: .seconds(60))   // cancelled only with the process
            guard let self, state.withLock({ $0.runs[identifier].map { $0.task == nil } ?? false }) else { return }
            await drop(identifier)
        }
        return identifier
    }

    /// The system started task `identifier`: held and watched for its expiry before anything
    /// else (an expiry that comes at once still finds it), in the same step as its end.
    private func started(_ identifier: String, _ task: any ContinuedProcessingTask) {
        enum Found { case run, ended(Bool), unknown }
        let found = state.withLock { state -> Found in
            if state.runs[identifier] != nil {
                state.runs[identifier]?.task = task
                return .run
            }
            return state.endedEarly.removeValue(forKey: identifier).map { .ended($0) } ?? .unknown
        }
        switch found {
        case .run:
            task.onExpiry { [weak self] in
                guard let self else { return }
                Task { await self.perform(identifier, { $0.expired() }) }
            }
            Task { await self.perform(identifier, { $0.started() }) }
        case let .ended(success): task.end(success: success)
        case .unknown: task.end(success: false)
        }
    }

    /// A run given up without a task (refused, or never started): its downloads no longer
    /// stay in the process, and go to the background session if the app is already away.
    private func drop(_ identifier: String) async {
        guard let run = state.withLock({ $0.runs.removeValue(forKey: identifier) }) else { return }
        run.watch?.cancel()
        run.uploadWatch?.cancel()
        if lifecycle.isAway, let background = lifecycle.background {
            if !run.plan.running.isEmpty { await background.handOffAll(among: run.plan.running) }
            if !run.plan.runningUploads.isEmpty { await background.handOffUploads() }
        }
    }

    /// One engine event for task `identifier`; false once the task has ended.
    private func apply(_ event: DownloadEvent, to identifier: String) async -> Bool {
        switch event {
        case let .progress(p): await perform(identifier) { $0.progressed(p.id, received: p.bytesReceived, total: p.totalBytes) }
        case let .ended(id, .completed(record)): await perform(identifier) { $0.ended(id, completed: record.bytesReceived) }
        case let .ended(id, _): await perform(identifier) { $0.ended(id, completed: nil) }
        case let .stateChanged(id, .handedOff, _): await perform(identifier) { $0.handedOff(id) }
        default: break
        }
        return state.withLock { $0.runs[identifier] != nil }
    }

    /// Steps the plan of `identifier` and carries out what it says. Reports go to the task in
    /// the step itself (in order); an end leaves the state in the same step, with its task or
    /// as an outcome for a task still to start.
    private func perform(_ identifier: String, _ step: (inout ContinuedProcessingPlan) -> [ContinuedProcessingPlan.Action]) async {
        let (yielding, uploadsToo, ending, task, watches) = state.withLock { state
            -> ([String], Bool, Bool?, (any ContinuedProcessingTask)?, [Task<Void, Never>?]) in
            guard var run = state.runs[identifier] else { return ([], false, nil, nil, []) }
            var yielding: [String] = [], uploadsToo = false, ending: Bool?
            for action in step(&run.plan) {
                switch action {
                case let .report(completed, total): run.task?.report(completed: completed, total: total)
                case let .yield(ids): yielding += ids
                case .yieldUploads: uploadsToo = true
                case let .end(success): ending = success
                }
            }
            guard let ending else {
                state.runs[identifier] = run
                return (yielding, uploadsToo, nil, nil, [])
            }
            state.runs[identifier] = nil
            if run.task == nil { state.endedEarly[identifier] = ending }
            return (yielding, uploadsToo, ending, run.task, [run.watch, run.uploadWatch])
        }
        if !yielding.isEmpty { await yield(yielding) }
        if uploadsToo { await lifecycle.background?.handOffUploads() }
        if let ending {
            watches.forEach { $0?.cancel() }
            task?.end(success: ending)
        }
    }

    /// The covered uploads' records, read once a second on the engine's clock: what the
    /// server confirmed, and the end when a record is gone (the server holds the file).
    private func watchUploads(_ identifier: String) async {
        let downloader = lifecycle.downloader
        let clock = downloader.configuration.clock
        while let ids = state.withLock({ $0.runs[identifier]?.plan.runningUploads }), !ids.isEmpty {
            do { try await clock.sleep(until: clock.now + .seconds(1), for: .progressTick) } catch { return }   // cancelled: the task ended
            for id in ids.sorted() {
                do {
                    if let record = try await downloader.database.upload(id: id)?.record {
                        await perform(identifier) { $0.uploadProgressed(id, confirmed: record.confirmedBytes) }
                    } else {
                        await perform(identifier) { $0.uploadEnded(id, completed: true) }
                    }
                } catch {
                    logger.info("reading upload \(id) for continued processing: \(error)")
                }
            }
        }
    }

    /// The expiry's stop: to the background session when there is one, else a pause.
    private func yield(_ ids: [String]) async {
        var left = Set(ids)
        if let background = lifecycle.background { left.subtract(await background.handOffAll(among: left)) }
        for id in left.sorted() {
            do { try await lifecycle.downloader.pause(id: id) } catch { logger.info("pausing \(id) at the task's expiry: \(error)") }
        }
    }
}
