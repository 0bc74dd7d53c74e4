import Foundation

extension DownloadRun {
    /// Checks the download is still this run's by the guarded write that renews its lease:
    /// refused when another process paused, cancelled or took it over since this run last
    /// wrote (a heartbeat need not have ticked since), and the run stops. Made before a
    /// request after a backoff, before each request of a range, and before a named partial
    /// is opened: without it a stale run asked for, or cut the partial of, a download that
    /// had ended or gone on elsewhere (each found by the simulator).
    @discardableResult
    func renewLeaseOrStop() async throws -> DownloadRecord {
        let owner = context.owner, expiry = context.leaseExpiry()
        return try await persist { $0.renewLease(by: owner, until: expiry) }
    }

    /// Gives the partial a file of its own when this run took the download over from
    /// `previous`, another owner whose run may still be alive: its lease lapsed while its
    /// process was stopped, suspended or starved, or it runs on another host. The bytes are
    /// copied to a new file that replaces the partial (``FreshCopy``); that run's descriptor
    /// still points at the old one, so what it writes when it goes on (its staged bytes, a
    /// background write) lands there, never in this run's partial, and its next guarded
    /// write finds the download taken. Found by the simulator (seed 9308148): a process
    /// suspended past its lease, whose download another process resumed from zero under a
    /// new version and completed, wrote its staged bytes of the old version into that
    /// partial first. A dead owner, or this one, writes nothing more: no copy.
    func takeOverPartial(_ partialURL: URL, from previous: String?) async throws {
        guard let previous, previous != context.owner.id, context.owner.mayBeAlive(previous) else { return }
        guard try await Blocking.run({ try FreshCopy.replace(partialURL) }) else { return }
        context.logger.info("taken over from \(previous), whose run may still be alive: the partial was copied to a file of its own", metadata: ["id": "\(id)"])
    }

    /// The download's record, read in a task a stop does not cancel (a pause may have
    /// cancelled this one): `.some(nil)` when the record is gone, `nil` when it could not be
    /// read (logged).
    func recordPastStop() async -> DownloadRecord?? {
        let db = self.db, id = self.id, context = self.context
        return await EngineExecutor.current.task {
            await context.bestEffort("reading the record", id: id, { try await db.record(id: id) })
        }.value
    }
}
