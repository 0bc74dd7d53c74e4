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

    /// The claim: queued (or interrupted) to downloading, with this downloader's lease, in
    /// one guarded write; refused while another lease is in force.
    ///
    /// When the record names another owner as the partial's last writer and that owner may
    /// still be alive (its lease lapsed while its process was stopped, suspended or starved,
    /// or it runs on another host), the partial is first given a file of its own
    /// (``takeOverPartial(_:from:)``), and only then claimed: until the copy is in place the
    /// record keeps naming that writer, so a kill or a failed copy leaves it to be copied
    /// again. (A writer named between that check and the claim is copied after it.)
    func claim() async throws -> DownloadRecord {
        let owner = context.owner
        let expiry = context.leaseExpiry()
        var copied: String?   // the writer whose partial this run copied last
        while true {
            let writer = Locked<String?>(nil)   // the partial's last writer, as the write found it
            let copiedNow = copied
            guard let record = try await db.update(id: id, ifStateIn: [.queued, .downloading], lease: owner, { r in
                let last = r.leaseOwner
                writer.withLock { $0 = last }
                if let last, last != copiedNow, Self.mayStillWrite(last, for: owner) { return }   // copied before it is claimed
                r.claim(by: owner, until: expiry)
            }) else {
                if let current = try await db.record(id: id), owner.isBlocked(by: current) { throw LeasedElsewhere() }
                throw ExternalStop()
            }
            let last = writer.withLock { $0 }
            if record.state == .downloading, record.leaseOwner == owner.id { return record }
            guard let last else { throw ExternalStop() }
            try await takeOverPartial(context.fileURL(record.partialPath), from: last)
            copied = last
        }
    }

    /// Whether `last`, the owner a record names as its partial's last writer, may still
    /// write it: another owner, not certainly gone.
    static func mayStillWrite(_ last: String, for owner: LeaseOwner) -> Bool {
        last != owner.id && owner.mayBeAlive(last)
    }

    /// Gives the partial a file of its own before this run takes the download over from
    /// `previous`, an owner whose run may still be alive. The bytes are copied to a new file
    /// that replaces the partial (``FreshCopy``); that run's descriptor still points at the
    /// old one, so what it writes through it when it goes on (its staged bytes, a background
    /// write) lands there, never in this run's partial, and its next guarded write finds the
    /// download taken. (What such a run does by name, before its guarded write finds it out,
    /// this cannot stop: RELIABILITY.md.) Found by the simulator (seed 9308148): a process
    /// suspended past its lease, whose download another process resumed from zero under a
    /// new version and completed, wrote its staged bytes of the old version into that
    /// partial first.
    func takeOverPartial(_ partialURL: URL, from previous: String) async throws {
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
