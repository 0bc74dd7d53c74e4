#if os(iOS) || COURIER_DARWIN_TYPECHECK
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
import CourierURLSession
#endif
#if !COURIER_DARWIN_TYPECHECK
import BackgroundTasks
#endif
import Foundation

// iOS-only: continued processing through BGTaskScheduler. Declarations checked against
// developer.apple.com (BGTaskScheduler: `class var shared`, `func register(forTaskWithIdentifier
// identifier: String, using queue: dispatch_queue_t?, launchHandler: @escaping (BGTask) ->
// Void) -> Bool`, iOS 13; `func submit(_ taskRequest: BGTaskRequest) throws`, iOS 13;
// BGTask: `var identifier`, `var expirationHandler: (() -> Void)?`,
// `func setTaskCompleted(success: Bool)`, iOS 13; BGContinuedProcessingTask (ProgressReporting:
// `var progress: Progress { get }`) and BGContinuedProcessingTaskRequest (`init(identifier:
// title: subtitle:)`, `var strategy: SubmissionStrategy`, `.fail`), iOS 26), and type-checked
// on Linux by scripts/darwin-typecheck.

/// The system's continued processing (iOS 26): make it once at launch, before the app
/// finishes launching (it registers the launch handler of `<identifierPrefix>.*`, which the
/// app's Info.plist lists under `BGTaskSchedulerPermittedIdentifiers`), and give it to
/// ``ContinuedTransfers``. A request the system cannot start at once is refused
/// (`strategy = .fail`): the downloads then go to the background session as before.
@available(iOS 26.0, *)
public final class BackgroundTaskContinuedProcessing: ContinuedProcessingSystem {
    private let runs = Runs()

    /// Registers the launch handler for `<identifierPrefix>.*`; `nil` when the system refused
    /// the registration (the wildcard is missing from Info.plist, or registered twice).
    public init?(identifierPrefix: String) {
        let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: "\(identifierPrefix).*", using: nil) { [runs] task in
            let run = runs.take(task.identifier)
            guard let run, let continued = task as? BGContinuedProcessingTask else { return task.setTaskCompleted(success: false) }
            run(SystemTask(continued))
        }
        guard registered else { return nil }
    }

    /// Submits a request that starts now or is refused.
    public func submit(identifier: String, title: String, subtitle: String, run: @escaping @Sendable (any ContinuedProcessingTask) -> Void) throws {
        let request = BGContinuedProcessingTaskRequest(identifier: identifier, title: title, subtitle: subtitle)
        request.strategy = .fail
        runs.put(identifier, run)
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            _ = runs.take(identifier)
            throw error
        }
    }

    /// What to run for each submitted identifier, until the system starts it.
    private final class Runs: @unchecked Sendable {   // `byIdentifier` under `lock`
        let lock = NSLock()
        var byIdentifier: [String: @Sendable (any ContinuedProcessingTask) -> Void] = [:]
        func put(_ identifier: String, _ run: @escaping @Sendable (any ContinuedProcessingTask) -> Void) { lock.withLock { byIdentifier[identifier] = run } }
        func take(_ identifier: String) -> (@Sendable (any ContinuedProcessingTask) -> Void)? { lock.withLock { byIdentifier.removeValue(forKey: identifier) } }
    }

    /// The system's task, as Courier uses it.
    private final class SystemTask: ContinuedProcessingTask, @unchecked Sendable {   // the system's object; its calls are thread-safe
        let task: BGContinuedProcessingTask
        init(_ task: BGContinuedProcessingTask) { self.task = task }
        func report(completed: Int64, total: Int64) {
            task.progress.totalUnitCount = total
            task.progress.completedUnitCount = completed
        }
        func end(success: Bool) { task.setTaskCompleted(success: success) }
        func onExpiry(_ handler: @escaping @Sendable () -> Void) { task.expirationHandler = handler }
    }
}
#endif
