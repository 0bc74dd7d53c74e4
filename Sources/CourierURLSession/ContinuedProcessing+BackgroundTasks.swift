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

/// The system's continued processing (iOS 26), given to ``ContinuedTransfers``. Each request
/// registers its own identifier's launch handler just before it is submitted (these tasks are
/// exempt from registering at launch), on a serial queue; the app's Info.plist lists the
/// prefix as `<prefix>.*` under `BGTaskSchedulerPermittedIdentifiers`. A request the system
/// cannot start at once is refused (`strategy = .fail`): the downloads then go to the
/// background session as before. At the expiry the task ends at most 5 seconds after
/// Courier was told, whether or not its downloads were handed off by then.
@available(iOS 26.0, *)
public final class BackgroundTaskContinuedProcessing: ContinuedProcessingSystem {
    private let queue = DispatchQueue(label: "courier.continued-processing")

    /// Makes the adapter.
    public init() {}

    /// Registers `identifier`'s launch handler, then submits a request that starts now or is refused.
    public func submit(identifier: String, title: String, subtitle: String, run: @escaping @Sendable (any ContinuedProcessingTask) -> Void) throws {
        let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: queue) { task in
            guard let continued = task as? BGContinuedProcessingTask else { return task.setTaskCompleted(success: false) }
            let system = SystemTask(continued)
            continued.expirationHandler = { system.expire() }   // before anything else: an expiry at once is heard
            run(system)
        }
        guard registered else { throw CocoaError(.featureUnsupported) }
        let request = BGContinuedProcessingTaskRequest(identifier: identifier, title: title, subtitle: subtitle)
        request.strategy = .fail
        try BGTaskScheduler.shared.submit(request)
    }

    /// The system's task, as Courier uses it: ended once, and at most 5 s after its expiry.
    private final class SystemTask: ContinuedProcessingTask, @unchecked Sendable {   // `ended` and `handler` under `lock`
        let task: BGContinuedProcessingTask
        let lock = NSLock()
        var ended = false
        var handler: (@Sendable () -> Void)?
        init(_ task: BGContinuedProcessingTask) { self.task = task }
        func report(completed: Int64, total: Int64) {
            task.progress.totalUnitCount = total
            task.progress.completedUnitCount = completed
        }
        func end(success: Bool) {
            guard lock.withLock({ () -> Bool in defer { ended = true }; return !ended }) else { return }
            task.setTaskCompleted(success: success)
        }
        func onExpiry(_ handler: @escaping @Sendable () -> Void) { lock.withLock { self.handler = handler } }
        func expire() {
            lock.withLock { handler }?()
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { self.end(success: false) }
        }
    }
}
#endif
