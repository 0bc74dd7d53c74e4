import Foundation
import GRDB

/// Which download runs next, and how a run's end is recorded and announced.
extension Downloader {
    // MARK: Scheduling

    func adopt(_ record: DownloadRecord) {
        let entry = Adopted(priority: record.priority, createdAt: record.createdAt)
        adopted[record.id] = entry
        // Keep `waiting` sorted with the next to run last: a binary search, not a scan of
        // every adopted download at each scheduling step (thousands queued by `get -i`).
        var low = 0, high = waiting.count
        while low < high {
            let mid = (low + high) / 2
            if Self.runsBefore((waiting[mid].entry, waiting[mid].id), (entry, record.id)) { high = mid } else { low = mid + 1 }
        }
        waiting.insert((record.id, entry), at: low)
    }

    /// Priority first, then age, then id.
    static func runsBefore(_ a: (Adopted, String), _ b: (Adopted, String)) -> Bool {
        if a.0.priority != b.0.priority { return a.0.priority > b.0.priority }
        if a.0.createdAt != b.0.createdAt { return a.0.createdAt < b.0.createdAt }
        return a.1 < b.1
    }

    func pump() {
        guard !isShutDown, queueHolds == 0 else { return }
        let limit = max(1, context.configuration.maxConcurrentDownloads)
        while running.count < limit, let next = waiting.popLast() {
            // Entries are dropped lazily: paused, cancelled or already running ones are skipped.
            guard let entry = adopted[next.id], entry.priority == next.entry.priority, entry.createdAt == next.entry.createdAt,
                  running[next.id] == nil else { continue }
            launch(next.id)
        }
        if drainsQueue, adopted.count - running.count < limit { refill() }
        wakeIdleWaiters()
    }

    /// Reads the next page of the database's queue into `adopted` (a few times the
    /// concurrency), so a long queue costs memory for a page, not for every record.
    func refill() {
        guard !refilling, !isShutDown else { return }
        refilling = true
        let limit = max(8, max(1, context.configuration.maxConcurrentDownloads) * 4)
        let exclude = Set(adopted.keys).union(running.keys)
        let database = context.database, owner = context.owner
        let logger = context.logger, clock = context.configuration.clock
        EngineExecutor.current.task {
            do {
                let page = try await database.nextQueued(limit: limit, excluding: exclude, owner: owner)
                await self.refilled(page)
            } catch {
                // A failed read is not an empty queue: the queue stays to drain, read again
                // after a second (a busy or briefly locked database passes).
                logger.warning("reading the queue failed; trying again in 1 s: \(error)")
                try? await clock.sleep(for: .seconds(1), .queueRefill)   // cancelled only with the process: the retry below is then moot
                await self.refillFailed()
            }
        }
    }

    func refillFailed() {
        refilling = false
        stoppedWhileRefilling = []
        refillFailures += 1
        if refillFailures >= 5 {
            // The database keeps failing: stop draining (what is adopted still runs) rather
            // than spin; the next resume or enqueue drains again.
            context.logger.error("reading the queue failed \(refillFailures) times in a row; the rest of the queue waits for the next resume")
            refillFailures = 0
            drainsQueue = false
            wakeIdleWaiters()
            return
        }
        pump()
    }

    func refilled(_ page: [DownloadRecord]) {
        refilling = false
        refillFailures = 0
        let stopped = stoppedWhileRefilling
        stoppedWhileRefilling = []
        if page.isEmpty { drainsQueue = false; wakeIdleWaiters(); return }
        for record in page where adopted[record.id] == nil && running[record.id] == nil && !stopped.contains(record.id) { adopt(record) }
        pump()
    }

    /// Stops download `id` if it runs here, with `intent`, and returns once its end is
    /// recorded and announced; false when it does not run here. Either way it is no longer
    /// waiting its turn, nor brought back by a page of the queue read before.
    @discardableResult
    func stopRunning(_ id: String, _ intent: Intent) async -> Bool {
        adopted[id] = nil
        if refilling { stoppedWhileRefilling.insert(id) }
        guard let task = running[id] else { return false }
        // A stop already asked for is never downgraded: cancel over pause over hand-off.
        if intents[id].map({ $0.rank < intent.rank }) ?? true { intents[id] = intent }
        task.run.cancel()
        await task.supervisor.value
        return true
    }

    /// The stored record of `id` once no run of this process is ending over it, nor stale: a
    /// run here over a download another process paused or failed (the run has not seen it
    /// yet) is stopped, writing nothing, and waited for, so a resume is not dropped as
    /// "already running" (the simulator: the resume said done, the download stayed paused).
    func settledRecord(_ id: String) async throws -> DownloadRecord {
        while true {
            if let ending = endingRuns[id] { await ending.value; continue }   // its end is being written: after it
            let run = running[id]?.supervisor
            let record = try await storedRecord(id)
            if endingRuns[id] != nil { continue }   // a run began to end during the read
            guard let run, running[id]?.supervisor == run, record.state == .paused || record.state == .failed else { return record }
            await stopRunning(id, .yield)
        }
    }

    func launch(_ id: String) {
        let run = DownloadRun(id: id, context: context, liveURL: liveURLs[id],
                              limiter: context.configuration.maxBytesPerSecond.map { RateLimiter(bytesPerSecond: $0, clock: context.configuration.clock) },
                              partialIsWhole: wholePartials.remove(id) != nil)
        let runTask = EngineExecutor.current.task { await run.run() }
        let supervisor = EngineExecutor.current.task {
            let outcome = await runTask.value
            await self.runEnded(id, outcome)
        }
        running[id] = Running(run: runTask, supervisor: supervisor)
    }

    func runEnded(_ id: String, _ outcome: RunOutcome) async {
        let supervisor = running.removeValue(forKey: id)?.supervisor
        adopted[id] = nil
        let intent = intents.removeValue(forKey: id)
        let db = context.database
        endingRuns[id] = supervisor
        defer {
            if let supervisor, endingRuns[id] == supervisor { endingRuns[id] = nil }
            pump()
        }
        // However the run ended, a lease still held by this downloader is released first, so
        // a waiter that exits on the final event leaves no lease behind.
        if outcome.releasesLease { await context.bestEffort("releasing the lease", id: id) { try await db.releaseLease(id: id, owner: context.owner) } }
        let end: DownloadEnd
        switch outcome {
        case let .completed(record): end = .completed(record)
        case let .failed(error): end = .failed(error)
        case let .paused(error): end = .paused(error)
        case let .interrupted(unsaved):
            let read = await context.bestEffort("reading the record", id: id) { try await db.record(id: id) }
            let record = read ?? nil
            if let record, record.state == .completed {
                // The run completed the record before the stop reached it: that is how it
                // ended (a cancel then goes on as for any completed download).
                end = .completed(record)
                break
            }
            if case .some(.none) = read {
                // Gone: another process cancelled it before this stop was recorded (and its
                // partial, if the run had named one; RELIABILITY.md). Nothing is left to pause.
                liveURLs[id] = nil
                end = .cancelled
                break
            }
            let partial = record.map { context.fileURL($0.partialPath) }
            var kept: Int64 = 0
            if let partial { kept = await context.bestEffort("counting kept bytes", id: id) { try await db.keptBytes(id: id, partial: partial) } ?? PartialFile.length(at: partial) }
            let length = kept
            switch intent {
            case .cancel:
                liveURLs[id] = nil
                if let partial { await context.deletePartial(partial, id: id) }
                await context.bestEffort("deleting the record", id: id) { try await db.delete(id: id) }
                end = .cancelled
            case .handOff:
                // Not an end: the download goes on in the system's hands, and its stream
                // ends when the hand-off's result has been adopted and run. (Unrecorded:
                // it pauses instead.) The kept bytes' validators first: the hand-off asks
                // for the rest with them.
                if let unsaved {
                    await context.bestEffort("recording the reply's validators", id: id) {
                        try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { unsaved(&$0); $0.bytesReceived = length }
                    }
                }
                if case .some(.some) = await context.bestEffort("recording the hand-off", id: id, { try await recordHandOff(id) }) { return }
                fallthrough
            case .pause:
                // With the validators of the reply the kept bytes came from, when the run
                // had not written them (a small body): the resume asks for the rest.
                let paused = await context.bestEffort("recording the pause", id: id) {
                    try await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { unsaved?(&$0); $0.pause(keeping: length) }
                }
                let total = (paused ?? nil)?.totalBytes ?? record?.totalBytes
                context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: length, totalBytes: total)))
                end = .paused(nil)
            case .yield:
                // Stopped elsewhere (paused or failed by another process): as the record says.
                end = record.flatMap { Self.persistedEvent($0).end } ?? .paused(nil)
            case .shutdown, nil:
                await context.bestEffort("requeueing", id: id) {
                    try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { unsaved?(&$0); $0.requeue(keeping: length, freshStart: false) }
                }
                end = .shutDown
            }
        case .leasedElsewhere:
            let record = await context.bestEffort("reading the record", id: id) { try await db.record(id: id) } ?? nil
            end = .leftToAnotherProcess(record.map(Self.leasedError) ?? CourierError(.leased, "download \(id) is running elsewhere"))
        case .stoppedExternally:
            // Another process paused, cancelled, completed or took the record under this run.
            let record = await context.bestEffort("reading the record", id: id) { try await db.record(id: id) } ?? nil
            // Queued again meanwhile and free (a resume here while this run, launched from an
            // older turn, found the record paused: the resume's turn went with this run's
            // end, and the download sat queued with nobody to run it; the simulator): it
            // runs again, and nothing has ended.
            if let record, record.state == .queued, !context.owner.isBlocked(by: record), !isShutDown {
                adopt(record)
                return
            }
            // Handed off by this process meanwhile (a run launched from a page read before the
            // hand-off, its claim refused): not an end; the hand-off's adoption ends it. (One
            // another process made, its lease having lapsed here, is left to it, as before.)
            if record?.state == .handedOff {
                let handOff = await context.bestEffort("reading the hand-off", id: id) { try await db.handOff(id: id) } ?? nil
                if handOff?.handOff.owner == context.owner.id { return }
            }
            end = record.map { Self.persistedEvent($0).end ?? .leftToAnotherProcess(Self.leasedError($0)) } ?? .cancelled
        }
        context.hub.publish(.ended(id: id, end))
    }
}
