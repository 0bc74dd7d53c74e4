import Foundation

/// Who may run a download right now: the lease on a record.
///
/// A process that runs a download writes its owner id and an expiry into the record, in
/// the same transaction that moves it to `downloading`, and renews the expiry while it
/// runs (``DownloaderConfiguration/leaseDuration``). Another process (or another
/// ``Downloader`` on the same database) does not start, resume or re-queue a record whose
/// lease is live. A lease is stale, and may be taken over, once it has expired, or at once
/// when its owner was a process on this host that no longer exists (a SIGKILLed
/// `courier get` does not hold its downloads for the lease's duration).
public struct LeaseOwner: Sendable, Hashable, CustomStringConvertible {
    /// `host:pid:nonce`; the nonce tells two downloaders of one process apart.
    public let id: String

    /// A fresh owner id for this process.
    public static func make() -> LeaseOwner {
        let nonce = UUID().uuidString.prefix(8).lowercased()
        return LeaseOwner(id: "\(hostName()):\(getpid()):\(nonce)")
    }

    public var description: String { id }

    /// Whether `record`'s lease is held by someone else and still in force at `now`.
    public func isBlocked(by record: DownloadRecord, now: Date = Date()) -> Bool {
        guard let owner = record.leaseOwner, owner != id,
              let expiry = record.leaseExpiresAt, expiry > now else { return false }
        return Self.ownerMayBeAlive(owner)
    }

    /// False only when the owner is certainly gone: a process of this host whose pid no
    /// longer exists. Another host's owner, or a live pid, counts as alive until expiry.
    static func ownerMayBeAlive(_ owner: String) -> Bool {
        let parts = owner.split(separator: ":")
        guard parts.count >= 3, String(parts[0]) == hostName(), let pid = Int32(parts[1]), pid > 0 else { return true }
        if kill(pid, 0) == 0 { return true }
        return errno != ESRCH
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: ":", with: "_")
        return name.isEmpty ? "localhost" : name
    }
}
