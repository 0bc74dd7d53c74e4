import CourierCore

/// The rules of one continued-processing task (iOS 26's `BGContinuedProcessingTask`): which
/// downloads and uploads it covers, the progress the system shows for them, when it ends, and what the
/// system's expiry does (pure: an event in, actions out; ``ContinuedTransfers`` carries
/// them out).
///
/// - It covers the downloads the app marked as started by the user, and only those not yet
///   at their end.
/// - Its progress is the bytes of every covered download together, over their sizes; a
///   download not at its end counts at least one byte more than arrived (a size not known
///   yet, or a file still being verified), so the bar never reads 100 % (which the system
///   takes for finished) before the end.
/// - It ends when every covered download has ended or been handed to the system: a success
///   when each completed or went to the system, a failure when one failed or was cancelled.
/// - At its expiry the covered downloads not yet ended go to the background session when
///   there is one (what was kept stays, the rest goes on in the system), else are paused;
///   the task then ends as a failure, as the system asks.
public struct ContinuedProcessingPlan: Sendable, Equatable {
    /// What to do next.
    public enum Action: Sendable, Equatable {
        /// Show this progress (bytes) on the system's UI.
        case report(completed: Int64, total: Int64)
        /// Stop these downloads in the engine, keeping what they hold: hand them to the
        /// system, or pause them without a background session.
        case yield([String])
        /// Hand the registered features' uploads to the system (their pieces' rest as
        /// upload tasks), as at the hand-off phase.
        case yieldUploads
        /// End the task (`setTaskCompleted(success:)`).
        case end(success: Bool)
    }

    /// How a covered download stands.
    public enum Standing: Sendable, Equatable {
        /// In the engine, with the bytes it holds and its size when known.
        case running(received: Int64, total: Int64?)
        /// Verified at its final path.
        case completed(bytes: Int64)
        /// With the background session, as it stood when it went.
        case handedOff(received: Int64, total: Int64?)
        /// Failed, cancelled or paused: not at its end as the person wanted.
        case failed
    }

    /// The covered downloads, by id.
    public private(set) var covered: [String: Standing]
    /// The covered uploads, by the id of their record (`courierUpload`): what the server
    /// confirmed, of the file's size.
    public private(set) var uploads: [String: Standing]
    /// Whether the task has ended (nothing more is done).
    public private(set) var ended = false

    /// A plan for `downloads` and `uploads`, each with what its record holds now.
    public init(_ downloads: [(id: String, received: Int64, total: Int64?)], uploads: [(id: String, confirmed: Int64, size: Int64)] = []) {
        covered = Dictionary(downloads.map { ($0.id, .running(received: $0.received, total: $0.total)) }, uniquingKeysWith: { a, _ in a })
        self.uploads = Dictionary(uploads.map { ($0.id, .running(received: $0.confirmed, total: $0.size)) }, uniquingKeysWith: { a, _ in a })
    }

    /// Upload ids still going in the app's process.
    public var runningUploads: Set<String> {
        Set(uploads.compactMap { id, standing in if case .running = standing { return id } else { return nil } })
    }

    /// Ids still running in the engine.
    public var running: Set<String> {
        Set(covered.compactMap { id, standing in if case .running = standing { return id } else { return nil } })
    }

    /// The bytes to show: arrived, and the whole (known sizes, else what arrived).
    public var progress: (completed: Int64, total: Int64) {
        (Array(covered.values) + Array(uploads.values)).reduce((Int64(0), Int64(0))) { sum, standing in
            switch standing {
            case let .running(received, total), let .handedOff(received, total):
                return (sum.0 + received, sum.1 + max(total ?? 0, received + 1))
            case let .completed(bytes): return (sum.0 + bytes, sum.1 + bytes)
            case .failed: return sum
            }
        }
    }

    /// The task began: the progress as it stands (and its end, when nothing is left).
    public mutating func started() -> [Action] { report() + endIfDone() }

    /// Bytes arrived for `id`.
    public mutating func progressed(_ id: String, received: Int64, total: Int64?) -> [Action] {
        guard !ended, case .running = covered[id] else { return [] }
        covered[id] = .running(received: received, total: total)
        return report()
    }

    /// `id` reached its end in the engine (`completed`: verified at its final path).
    public mutating func ended(_ id: String, completed bytes: Int64?) -> [Action] {
        guard !ended, case .running = covered[id] else { return [] }
        covered[id] = bytes.map { .completed(bytes: $0) } ?? .failed
        return report() + endIfDone()
    }

    /// `id` went to the background session (the app left with a hand-off of its own).
    public mutating func handedOff(_ id: String) -> [Action] {
        guard !ended, case let .running(received, total) = covered[id] else { return [] }
        covered[id] = .handedOff(received: received, total: total)
        return endIfDone()
    }

    /// Upload `id`'s server confirmed `confirmed` bytes.
    public mutating func uploadProgressed(_ id: String, confirmed: Int64) -> [Action] {
        guard !ended, case let .running(received, size) = uploads[id], confirmed != received else { return [] }
        uploads[id] = .running(received: confirmed, total: size)
        return report()
    }

    /// Upload `id`'s record is gone: the server holds the whole file (`completed`), or the
    /// upload was given up.
    public mutating func uploadEnded(_ id: String, completed: Bool) -> [Action] {
        guard !ended, case let .running(_, size) = uploads[id] else { return [] }
        uploads[id] = completed ? .completed(bytes: size ?? 0) : .failed
        return report() + endIfDone()
    }

    /// The system's expiry: the running downloads and uploads yield, and the task ends as a
    /// failure.
    public mutating func expired() -> [Action] {
        guard !ended else { return [] }
        ended = true
        let left = running.sorted()
        return (left.isEmpty ? [] : [.yield(left)]) + (runningUploads.isEmpty ? [] : [.yieldUploads]) + [.end(success: false)]
    }

    private func report() -> [Action] {
        let p = progress
        return [.report(completed: p.completed, total: p.total)]
    }

    private mutating func endIfDone() -> [Action] {
        guard !ended, running.isEmpty, runningUploads.isEmpty else { return [] }
        ended = true
        return [.end(success: !covered.values.contains(.failed) && !uploads.values.contains(.failed))]
    }
}
