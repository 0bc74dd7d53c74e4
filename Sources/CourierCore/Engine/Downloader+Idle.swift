import Foundation

/// When a downloader is idle, and who waits for it.
extension Downloader {
    /// Whether nothing runs, nothing waits, and the database's queue holds nothing this
    /// downloader can take (records another process claimed are not its to wait for).
    public var isIdle: Bool { running.isEmpty && endingRuns.isEmpty && adopted.isEmpty && !drainsQueue && !refilling }

    /// Returns once the downloader is idle (see ``isIdle``), or shut down. For a caller
    /// that queued work it cannot name (``resumeAllPending(includePaused:includeFailed:)``):
    /// records another process claims before their turn here never run here, so no event
    /// speaks of them; every download that does run here ends with its final event first.
    public func waitUntilIdle() async {
        if isIdle || isShutDown { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    func wakeIdleWaiters() {
        guard isIdle || isShutDown, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Downloads held in memory to run (running or next in line): a page of the queue.
    var adoptedCount: Int { adopted.count }
}
