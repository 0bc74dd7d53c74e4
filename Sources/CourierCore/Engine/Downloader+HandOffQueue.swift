import Foundation

/// Handing off everything at once (an app about to be suspended): the order the system's
/// tasks are made in, and a queue that starts nothing while they are.
extension Downloader {
    /// Every download this process may hand off (running, and queued behind
    /// ``DownloaderConfiguration/maxConcurrentDownloads``), in the order the engine would
    /// run them: priority, then age. Tasks made in this order are the system's order.
    public func handOffOrder() async throws -> [String] {
        try checkOpen()
        return try await context.database.handOffCandidates(owner: context.owner)
    }

    /// Starts nothing new until the matching ``releaseQueue()``: a download stopped to be
    /// handed off does not let the next in line start (and be stopped again a moment later).
    /// Holds nest: two hand-offs under way hold the queue until both released it.
    public func holdQueue() { queueHolds += 1 }

    /// Releases one ``holdQueue()``; the queue starts downloads again once none is held.
    public func releaseQueue() {
        guard queueHolds > 0 else { return }
        queueHolds -= 1
        if queueHolds == 0 { pump() }
    }
}
