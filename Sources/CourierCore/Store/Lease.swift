import Foundation

/// Who may run a download right now: the lease on a record.
///
/// A process that runs a download writes its owner id and an expiry into the record, in
/// the same transaction that moves it to `downloading`, and renews the expiry while it
/// runs (``DownloaderConfiguration/leaseDuration``). Another process (or another
/// ``Downloader`` on the same database) does not start, resume or re-queue a record whose
/// lease is live. A lease is stale, and may be taken over, once it has expired, or at once
/// when its owner was a process of this host that is certainly not running any more: gone,
/// a zombie, or its pid now another process's (a SIGKILLed `courier get` does not hold its
/// downloads for the lease's duration).
public struct LeaseOwner: Sendable, Hashable, CustomStringConvertible {
    /// `host:pid:nonce:start`; the nonce tells two downloaders of one process apart, the
    /// start time (when the system tells it) a reused pid from the owner. Older ids have no
    /// start part.
    public let id: String
    /// How this owner tells whether another owner's process is alive.
    public let liveness: ProcessLiveness
    /// The time of day by which this owner dates its leases and judges others' expiries:
    /// the system's, or a simulated world's (issue 46: leases expire in simulated time).
    package let wallClock: @Sendable () -> Date

    /// An owner with a given id, judging others by `liveness`.
    public init(id: String, liveness: ProcessLiveness = .system) {
        self.init(id: id, liveness: liveness, wallClock: { Date() })
    }

    package init(id: String, liveness: ProcessLiveness, wallClock: @escaping @Sendable () -> Date) {
        self.id = id
        self.liveness = liveness
        self.wallClock = wallClock
    }

    /// A fresh owner id for this process.
    public static func make(liveness: ProcessLiveness = .system) -> LeaseOwner {
        make(liveness: liveness, wallClock: { Date() })
    }

    package static func make(liveness: ProcessLiveness, wallClock: @escaping @Sendable () -> Date) -> LeaseOwner {
        let nonce = UUID().uuidString.prefix(8).lowercased()
        let pid = getpid()
        let start = liveness.startTime(pid).map { ":\($0)" } ?? ""
        return LeaseOwner(id: "\(liveness.hostName):\(pid):\(nonce)\(start)", liveness: liveness, wallClock: wallClock)
    }

    public var description: String { id }

    public static func == (a: LeaseOwner, b: LeaseOwner) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// Whether `record`'s lease is held by someone else and still in force now.
    public func isBlocked(by record: DownloadRecord) -> Bool {
        isBlocked(by: record, now: wallClock())
    }

    /// Whether `record`'s lease is held by someone else and still in force at `now`.
    public func isBlocked(by record: DownloadRecord, now: Date) -> Bool {
        guard let owner = record.leaseOwner, owner != id,
              let expiry = record.leaseExpiresAt, expiry > now else { return false }
        return mayBeAlive(owner)
    }

    /// Whether `owner` is a downloader of this very process (same host and pid).
    package func sharesProcess(with owner: String) -> Bool {
        let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count >= 3 && String(parts[0]) == liveness.hostName && Int32(parts[1]) == getpid()
    }

    /// False only when the owner is certainly not running: a process of this host that is
    /// gone, a zombie, or whose pid now belongs to a process started at another time.
    /// Another host's owner, or anything that cannot be told, counts as alive until expiry.
    package func mayBeAlive(_ owner: String) -> Bool {
        let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, String(parts[0]) == liveness.hostName, let pid = Int32(parts[1]), pid > 0 else { return true }
        switch liveness.state(pid) {
        case .gone, .zombie: return false
        case .running, .unknown:
            if parts.count >= 4, let recorded = UInt64(parts[3]), let current = liveness.startTime(pid), current != recorded {
                return false
            }
            return true
        }
    }

}
