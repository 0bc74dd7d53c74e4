import Courier

/// Seed 002's DOWNLOAD button, one table of cases for both of its users: the engine's
/// ``DownloadButton`` over records and the media library's button over versions. Each test
/// target builds each case its own way and must reach the same verdict.
public enum ButtonCase: String, CaseIterable, Sendable, CustomStringConvertible {
    case noRecord, completeOpens, completeButMissing, completeButDoesNotOpen, inFlight, paused, failed

    /// What the rule book says, with the rule that decides it.
    public var expected: String {
        switch self {
        case .noRecord: return "download(rule 5)"
        case .completeOpens: return "open (rule 1)"
        case .completeButMissing: return "download(rule 2)"
        case .completeButDoesNotOpen: return "error (rule 3)"
        case .inFlight: return "in progress (rule 4)"
        case .paused, .failed: return "download(rule 6)"
        }
    }

    /// A verdict in the table's words.
    public static func words(_ verdict: DownloadButtonRules.Verdict) -> String {
        switch verdict {
        case .open: return "open (rule 1)"
        case .error: return "error (rule 3)"
        case .inProgress: return "in progress (rule 4)"
        case let .download(rule): return "download(rule \(rule))"
        }
    }

    public var description: String { rawValue }
}
