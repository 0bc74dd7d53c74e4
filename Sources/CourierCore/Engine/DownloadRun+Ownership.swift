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
