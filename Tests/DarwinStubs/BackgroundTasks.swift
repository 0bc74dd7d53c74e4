// DarwinStubs: BackgroundTasks, as Apple's documentation declares it (page named beside
// each). iOS 26's continued processing is newer than the package's floor, so it lives in
// this file of its own (scripts/darwin-typecheck checks the floor in DarwinStubs.swift only):
// every use of it must sit behind `@available(iOS 26.0, *)`. Nothing here ever runs.
import Foundation

/// https://developer.apple.com/documentation/backgroundtasks/bgtaskrequest
@available(iOS 13.0, tvOS 13.0, visionOS 1.0, *)
open class BGTaskRequest: NSObject {}

/// https://developer.apple.com/documentation/backgroundtasks/bgtask
@available(iOS 13.0, tvOS 13.0, visionOS 1.0, *)
open class BGTask: NSObject {
    /// https://developer.apple.com/documentation/backgroundtasks/bgtask/identifier (`var identifier: String { get }`)
    open var identifier: String { fatalError("stub") }
    /// https://developer.apple.com/documentation/backgroundtasks/bgtask/expirationhandler (`var expirationHandler: (() -> Void)? { get set }`)
    open var expirationHandler: (() -> Void)?
    /// https://developer.apple.com/documentation/backgroundtasks/bgtask/settaskcompleted(success:) (`func setTaskCompleted(success: Bool)`)
    open func setTaskCompleted(success: Bool) { fatalError("stub") }
}

/// https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler
@available(iOS 13.0, tvOS 13.0, visionOS 1.0, *)
open class BGTaskScheduler: NSObject {
    /// https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/shared (`class var shared: BGTaskScheduler { get }`)
    open class var shared: BGTaskScheduler { fatalError("stub") }
    /// https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/register(fortaskwithidentifier:using:launchhandler:)
    open func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?, launchHandler: @escaping (BGTask) -> Void) -> Bool {
        fatalError("stub")
    }
    /// https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/submit(_:) (`func submit(_ taskRequest: BGTaskRequest) throws`)
    open func submit(_ taskRequest: BGTaskRequest) throws { fatalError("stub") }
}

/// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtask
/// (`class BGContinuedProcessingTask`, a BGTask conforming to ProgressReporting)
@available(iOS 26.0, *)
open class BGContinuedProcessingTask: BGTask, ProgressReporting {
    /// ProgressReporting's `var progress: Progress { get }`
    open var progress: Progress { fatalError("stub") }
    /// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtask/updatetitle(_:subtitle:)
    open func updateTitle(_ title: String, subtitle: String) { fatalError("stub") }
}

/// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtaskrequest
@available(iOS 26.0, *)
open class BGContinuedProcessingTaskRequest: BGTaskRequest {
    /// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtaskrequest/submissionstrategy
    public enum SubmissionStrategy: Int, @unchecked Sendable {
        case fail = 0
        case queue = 1
    }
    /// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtaskrequest/init(identifier:title:subtitle:)
    public init(identifier: String, title: String, subtitle: String) { fatalError("stub") }
    /// https://developer.apple.com/documentation/backgroundtasks/bgcontinuedprocessingtaskrequest/strategy
    open var strategy: SubmissionStrategy = .queue
}
