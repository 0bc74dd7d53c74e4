import CourierCore

/// Several downloads as one bar: a media item's versions, a batch, the whole list.
public struct GroupProgress: Sendable, Equatable {
    /// How many downloads the group holds, and how many of them completed or failed.
    public var count = 0, completedCount = 0, failedCount = 0, activeCount = 0
    /// Bytes held by all of them.
    public var bytesReceived: Int64 = 0
    /// Their whole size, once every size is known (a cancelled download counts for nothing).
    public var totalBytes: Int64?
    /// Their speeds together.
    public var bytesPerSecond: Double = 0

    /// The group of `snapshots` (cancelled ones are left out).
    public init(_ snapshots: some Sequence<DownloadSnapshot>) {
        var total: Int64? = 0
        for s in snapshots where s.phase != .cancelled {
            count += 1
            if s.phase == .completed { completedCount += 1 }
            if s.phase == .failed { failedCount += 1 }
            if s.isActive { activeCount += 1 }
            bytesReceived += s.bytesReceived
            bytesPerSecond += s.bytesPerSecond
            total = total.flatMap { t in s.totalBytes.map { t + max($0, s.bytesReceived) } }
        }
        totalBytes = total
    }

    /// 0…1 once every size is known.
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        return totalBytes > 0 ? min(1, Double(bytesReceived) / Double(totalBytes)) : (count == completedCount ? 1 : 0)
    }

    /// Seconds left at the group's speed, when its size is known and bytes are arriving.
    public var secondsRemaining: Double? {
        guard let totalBytes, bytesPerSecond > 0 else { return nil }
        return Double(max(0, totalBytes - bytesReceived)) / bytesPerSecond
    }

    /// Whether every download of the group completed (and it has one).
    public var isComplete: Bool { count > 0 && completedCount == count }
}
