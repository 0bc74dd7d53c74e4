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

    /// Starts nothing new until ``releaseQueue()``: a download stopped to be handed off does
    /// not let the next in line start (and be stopped again a moment later).
    public func holdQueue() { queueHeld = true }

    /// Lets the queue start downloads again.
    public func releaseQueue() {
        guard queueHeld else { return }
        queueHeld = false
        pump()
    }
}
