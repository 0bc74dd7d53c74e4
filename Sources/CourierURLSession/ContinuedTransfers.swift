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

/// Keeps downloads the person started going after the app leaves the foreground, with the
/// system's own progress and cancel button (iOS 26's continued processing), where a
/// background session cannot carry them as they are (segmented downloads over several
/// connections, or a download the person watches). Make it once, with the app's
/// ``AppLifecycle``; call ``begin(_:title:subtitle:)`` from the person's action.
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
    private let runs = Locked<[String: Run]>([:])
    /// The outcome of a task whose downloads all ended before the system started it.
    private let endedEarly = Locked<[String: Bool]>([:])
    private let logger: Logger

    /// One submitted task: its plan, the task once started, and the watch on the events.
    private struct Run {
        var plan: ContinuedProcessingPlan
        var task: (any ContinuedProcessingTask)?
        var watch: Task<Void, Never>?
    }

    /// Makes the coordinator and tells `lifecycle` to leave covered downloads in the process.
    public init(lifecycle: AppLifecycle, system: any ContinuedProcessingSystem, identifierPrefix: String,
                logger: Logger = Logger(label: "courier.continued")) {
        self.lifecycle = lifecycle
        self.system = system
        self.identifierPrefix = identifierPrefix
        self.logger = logger
        lifecycle.keepInProcess { [runs] in
            runs.withLock { runs in runs.values.reduce(into: Set<String>()) { $0.formUnion($1.plan.running) } }
        }
    }

    /// The downloads a running (or submitted) task covers now.
    public var coveredIDs: Set<String> { runs.withLock { $0.values.reduce(into: Set<String>()) { $0.formUnion($1.plan.running) } } }

    /// Asks the system to keep `ids` going past the foreground, showing `title` and
    /// `subtitle`. Call it from the person's action (a tap), in the foreground. Returns the
    /// task's identifier, or `nil` when nothing is left to cover or the system refused (the
    /// downloads then go to the background session at the hand-off phase, as before).
    @discardableResult
    public func begin(_ ids: [String], title: String, subtitle: String) async -> String? {
        let downloader = lifecycle.downloader
        let events = downloader.events()   // before the records are read: nothing between is missed
        var downloads: [(id: String, received: Int64, total: Int64?)] = []
        for id in ids {
            guard let record = try? await downloader.record(id: id), !record.state.isTerminal else { continue }   // unknown or ended: not covered
            downloads.append((id, record.bytesReceived, record.totalBytes ?? record.expectedBytes))
        }
        guard !downloads.isEmpty else { return nil }
        let identifier = "\(identifierPrefix).\(UUID().uuidString.lowercased())"
        runs.withLock { $0[identifier] = Run(plan: ContinuedProcessingPlan(downloads)) }
        let watch = Task { [weak self] in
            for await event in events {
                guard let self, await self.apply(event, to: identifier) else { return }
            }
        }
        runs.withLock { $0[identifier]?.watch = watch }
        do {
            try system.submit(identifier: identifier, title: title, subtitle: subtitle) { [weak self] task in
                // Held and watched for its expiry before anything else: an expiry that comes
                // at once still finds the task.
                let held = self?.runs.withLock { runs -> Bool in
                    guard runs[identifier] != nil else { return false }
                    runs[identifier]?.task = task
                    return true
                }
                guard let self, held == true else {
                    return task.end(success: self?.endedEarly.withLock { $0.removeValue(forKey: identifier) } ?? false)   // ended before it began
                }
                task.onExpiry { [weak self] in
                    guard let self else { return }
                    Task { await self.perform(identifier, { $0.expired() }) }
                }
                Task { await self.perform(identifier, { $0.started() }) }
            }
            Task { [weak self] in
                // A task the system accepted but never started (it is not known to do so)
                // must not keep its downloads in the process: dropped after a minute.
                try? await Task.sleep(for: .seconds(60))   // cancelled only with the process
                self?.runs.withLock { runs in runs[identifier]?.task == nil ? runs.removeValue(forKey: identifier) : nil }?.watch?.cancel()
            }
            return identifier
        } catch {
            logger.info("the system refused continued processing; the downloads go to the background session as before: \(error)")
            runs.withLock { $0.removeValue(forKey: identifier) }?.watch?.cancel()
            return nil
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
        return runs.withLock { $0[identifier] != nil }
    }

    /// Steps the plan of `identifier` and carries out what it says.
    private func perform(_ identifier: String, _ step: (inout ContinuedProcessingPlan) -> [ContinuedProcessingPlan.Action]) async {
        let (actions, task) = runs.withLock { runs -> ([ContinuedProcessingPlan.Action], (any ContinuedProcessingTask)?) in
            guard var run = runs[identifier] else { return ([], nil) }
            let actions = step(&run.plan)
            runs[identifier] = run
            return (actions, run.task)
        }
        await carryOut(actions, identifier, task)
    }

    private func carryOut(_ actions: [ContinuedProcessingPlan.Action], _ identifier: String, _ task: (any ContinuedProcessingTask)?) async {
        for action in actions {
            switch action {
            case let .report(completed, total): task?.report(completed: completed, total: total)
            case let .yield(ids): await yield(ids)
            case let .end(success):
                runs.withLock { $0.removeValue(forKey: identifier) }?.watch?.cancel()
                if let task { task.end(success: success) } else { endedEarly.withLock { $0[identifier] = success } }
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
