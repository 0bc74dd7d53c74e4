/// Where the engine's own tasks run (issue 46). Apps and the command line never set it: the
/// engine's tasks then run on Swift's global executor, exactly as `Task {}` does, and its
/// blocking work on threads of its own. The simulator (`Tests/CourierTests/Simulation`) sets one
/// for a whole scenario, as a task-local that every task the engine starts inherits: an
/// executor that runs the engine's jobs one at a time, in an order drawn from a seed, with
/// the blocking file work and the database run inline on that executor's one thread, so
/// that nothing happens on a thread the seed does not order.
package struct EngineExecutor: Sendable {
    /// A `TaskExecutor`, on systems that have one (iOS 18, macOS 15; Linux).
    private let executor: (any Sendable)?
    /// Blocking work (file syncs and renames, the database) runs on the caller's thread.
    package let runsInline: Bool
    /// The simulated disk's faults (``DiskFaults``); nil outside a simulated world.
    package private(set) var disk: (any DiskFaults)?

    /// The executor of the engine's tasks in this task and those it starts.
    @TaskLocal package static var current = EngineExecutor(executor: nil, runsInline: false)

    private init(executor: (any Sendable)?, runsInline: Bool) {
        self.executor = executor
        self.runsInline = runsInline
    }

    /// The simulator's: the engine's tasks prefer `executor`; blocking work runs inline.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    package init(simulating executor: any TaskExecutor) {
        self.init(executor: executor, runsInline: true)
    }

    /// This executor with a simulated disk: bound for a world's run, every task it starts
    /// meets `disk`'s faults.
    package func with(disk: any DiskFaults) -> EngineExecutor {
        var copy = self
        copy.disk = disk
        return copy
    }

    /// Starts `operation` as an unstructured task (as `Task {}` does, without its actor
    /// isolation: an actor's state is reached with `await`) on this executor.
    @discardableResult
    package func task<T: Sendable>(_ operation: sending @escaping () async -> T) -> Task<T, Never> {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let preferred = executor as? any TaskExecutor {
            return Task(executorPreference: preferred, operation: operation)
        }
        return Task(operation: operation)
    }

    /// The same for an operation that throws.
    @discardableResult
    package func throwingTask<T: Sendable>(_ operation: sending @escaping () async throws -> T) -> Task<T, any Error> {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let preferred = executor as? any TaskExecutor {
            return Task(executorPreference: preferred, operation: operation)
        }
        return Task(operation: operation)
    }
}
