import Foundation

/// What the lease rules need to know about this machine's processes, injected so the rules
/// can be tested without real processes (``LeaseOwner/isBlocked(by:now:)``).
public struct ProcessLiveness: Sendable {
    /// What is known of a process id on this host.
    public enum State: Sendable, Equatable {
        /// Running (or stopped, or sleeping): it may renew its lease.
        case running
        /// Exited and not yet reaped by its parent: it holds nothing and renews nothing.
        case zombie
        /// No such process.
        case gone
        /// It cannot be told (no permission, no `/proc`): assumed alive.
        case unknown
    }

    /// This host's name, as lease owner ids write it.
    public var hostName: String
    /// The state of a process of this host.
    public var state: @Sendable (Int32) -> State
    /// When a process started (any monotonic unit, compared only with itself), or `nil`
    /// when it cannot be told: a pid running with another start time was reused.
    public var startTime: @Sendable (Int32) -> UInt64?

    /// Makes a liveness source (tests pass their own).
    public init(hostName: String, state: @escaping @Sendable (Int32) -> State, startTime: @escaping @Sendable (Int32) -> UInt64?) {
        self.hostName = hostName
        self.state = state
        self.startTime = startTime
    }

    /// The real machine: `/proc/<pid>/stat` where there is one (Linux: state and start time,
    /// so zombies and reused pids are told apart), else `kill(pid, 0)`.
    public static let system = ProcessLiveness(hostName: SystemProcesses.hostName(), state: SystemProcesses.state, startTime: SystemProcesses.startTime)
}

/// Reads the real process table.
enum SystemProcesses {
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: ":", with: "_")
        return name.isEmpty ? "localhost" : name
    }

    @Sendable static func state(_ pid: Int32) -> ProcessLiveness.State {
        guard pid > 0 else { return .unknown }
        if hasProcFS {
            guard let fields = statFields(pid) else { return .gone }
            switch fields.first {
            case "Z", "X", "x": return .zombie
            case nil: return .unknown
            default: return .running
            }
        }
        if kill(pid, 0) == 0 { return .running }
        return errno == ESRCH ? .gone : .unknown
    }

    @Sendable static func startTime(_ pid: Int32) -> UInt64? {
        guard hasProcFS, let fields = statFields(pid), fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    private static let hasProcFS = FileManager.default.fileExists(atPath: "/proc/self/stat")

    /// The fields of `/proc/<pid>/stat` after the command name: the state first (field 3 of
    /// proc(5)), the start time at index 19 (field 22). The name may hold spaces and
    /// parentheses, so the fields start after the last `)`.
    static func statFields(_ pid: Int32) -> [Substring]? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
    }
}
