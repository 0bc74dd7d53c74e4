import Crypto
import Foundation
import Logging

/// One download's run: requests, retries, writes and the atomic finish, until the file is
/// complete, fails for good, pauses, or the task is cancelled.
struct DownloadRun: Sendable {
    let id: String
    let context: EngineContext
    /// The URL with its secrets, known only to this process (the record stores it redacted).
    var liveURL: String? = nil
    /// The download's byte-rate limit, shared by its connections (`nil`: none).
    var limiter: RateLimiter? = nil
    /// A background hand-off made the partial file whole: verify and finish it, no request.
    var partialIsWhole = false
    /// The fresh URLs denied ranges were given in this run (``RangeRefresh``): its later attempts ask the latest.
    let rangeRefresh = RangeRefresh()
    /// What the current attempt's reply would add to the record, not written yet.
    let unsavedReply = UnsavedReply()
    let openedPartial = OpenedPartial()
    /// Body bytes received in this run (every connection's): an attempt's share, less what
    /// it added to the file, was thrown away (``DownloadRecord/bytesDiscarded``).
    let bodyBytes = Locked<Int64>(0)
    /// Each range's retry budget, kept across the run's attempts: a range that gave up
    /// starts the next attempt at its limit, not afresh.
    let rangeBudgets = Locked<[Int: RetryBudget]>([:])
    /// Who ends the run when both could: its body completing the record (``markCompleted``),
    /// or the lease heartbeat that found the lease lost. The first to claim it keeps it.
    let ending = Locked(RunEnding())

    typealias AttemptOutcome = DownloadLifecycle.Outcome

    var config: DownloaderConfiguration { context.configuration }
    var db: CourierDatabase { context.database }

    func run() async -> RunOutcome {
        do {
            return try await withLeaseHeartbeat { try await loop() }
        } catch is CancellationError {
            return .interrupted(unsaved: unsavedReply.take())
        } catch is LeasedElsewhere {
            return .leasedElsewhere
        } catch is ExternalStop {
            await dropOrphanedPartial()
            return .stoppedExternally
        } catch let error as CourierError {
            if Task.isCancelled { return .interrupted(unsaved: unsavedReply.take()) }
            if case .pause = DownloadLifecycle.ending(for: error) { return await pause(with: error) }
            return await fail(with: error)
        } catch {
            if Task.isCancelled { return .interrupted(unsaved: unsavedReply.take()) }
            return await fail(with: CourierError(.unexpected, "unexpected error: \(error)", underlying: error))
        }
    }

    /// Runs `body` while a heartbeat renews the lease; a lost lease (another process took
    /// it over, or the record left `downloading`) or a failed renewal stops the body, unless
    /// the body is completing the record: its own completing write takes the record out of
    /// `downloading` a moment before it returns, and an end read then from the record says
    /// whatever came after (a cancel elsewhere: "cancelled" over a download that completed).
    /// The heartbeat then goes on renewing (a long fsync of the finished file keeps its
    /// lease) and the body ends the run, completed or stopped by what its write found; so it
    /// does too when the run is stopped here (its own cancellation is not an end).
    func withLeaseHeartbeat(_ body: @escaping @Sendable () async throws -> RunOutcome) async throws -> RunOutcome {
        try await withThrowingTaskGroup(of: RunOutcome?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                let owner = context.owner
                while true {
                    do { try await config.clock.sleep(for: config.leaseDuration / 3, .heartbeat) } catch { return nil }
                    let expiry = context.leaseExpiry()
                    let lost: (any Error)?
                    do {
                        let renewed = try await db.update(id: id, ifStateIn: [.downloading], lease: owner) { $0.renewLease(by: owner, until: expiry) }
                        lost = renewed == nil ? ExternalStop() : nil
                    } catch {
                        if error is CancellationError || Task.isCancelled { return nil }   // stopped here: as for the sleep
                        lost = error
                    }
                    guard let lost else { continue }
                    if ending.withLock({ $0.stop(for: lost) }) { throw lost }
                }
            }
            defer { group.cancelAll() }
            do {
                while let result = try await group.next() {
                    if let result { return result }
                }
            } catch {
                // The heartbeat's reason when the body's cancellation came first (it stopped the
                // body); any other error is its own.
                throw (error is CancellationError ? ending.withLock { $0.lost } : nil) ?? error
            }
            throw CancellationError()
        }
    }

    func loop() async throws -> RunOutcome {
        // The claim (`claim()`). Never a paused or failed record: every start here requeued it
        // first, so one of those was paused or failed by another process while it waited in
        // this one's queue, and running it would overrule that (the simulator: a download
        // another process had failed, asked for again).
        var record = try await claim()
        context.hub.publish(.stateChanged(id: id, state: .downloading, error: nil))

        let partialURL = context.fileURL(record.partialPath)
        let finalURL = context.fileURL(record.localFinalPath)

        if let done = try await completeFileInPlace(record, partialURL: partialURL, finalURL: finalURL) {
            return .completed(done)
        }

        // A hand-off's reply made the partial whole: the usual finish (size, SHA-256, sync,
        // rename) with no request. (A partial found whole otherwise asks the server, 416.)
        if partialIsWhole, let total = record.totalBytes, total > 0, PartialFile.length(at: partialURL) == total {
            switch try await finish(record: record, length: total, hasher: nil) {
            case let .finished(done): return .completed(done)
            case let .fail(error): throw error
            default: break
            }
        }

        var url = try URLPolicy.validate(try await usableURL(record))
        var lifecycle = DownloadLifecycle(retryPolicy: config.retryPolicy, maxRestarts: config.maxRestarts,
                                          canRefresh: context.refresher(for: id) != nil, discarded: record.bytesDiscarded,
                                          jitter: config.retryJitter)
        var action = lifecycle.start(kept: try await heldBytes(record, partialURL))
        var keptBefore: Int64 = 0, held: Int64 = 0   // held: after the last attempt, for the log

        // The lifecycle decides; this loop only carries its actions out.
        while true {
            try Task.checkCancellation()
            switch action {
            case .attempt:
                let partialLength = PartialFile.length(at: partialURL)
                keptBefore = try await heldBytes(record, partialURL, length: partialLength)
                let receivedBefore = bodyBytes.withLock { $0 }
                let outcome = try await attempt(record: record, url: url, partialURL: partialURL, partialLength: partialLength, finalURL: finalURL)
                // Finished: the completed record came back with it and the file is in place;
                // nothing below is needed (a read and a stat saved for every file).
                if case let .finished(done) = outcome { return .completed(done) }
                // A denied range got a fresh URL: the next attempts ask it (it was recorded,
                // redacted), and it is fresh enough to resume with.
                if let fresh = await rangeRefresh.take() {
                    url = fresh
                    lifecycle.rangesRefreshedURL()
                }
                record = try await db.record(id: id) ?? record
                // What is held now (a segmented partial is preallocated: its ranges say), and
                // what arrived without adding to it.
                let kept = try await heldBytes(record, partialURL)
                held = kept
                let discarded = max(0, bodyBytes.withLock { $0 } - receivedBefore - max(0, kept - keptBefore))
                action = lifecycle.attemptEnded(outcome, kept: kept, discarded: discarded, size: record.totalBytes ?? record.expectedBytes)
                record = try await recordAttempt(outcome, action, kept: kept, discarded: discarded) ?? record
            case let .refreshURL(reason):
                let fresh = try await context.refresher(for: id)?.refreshedURL(for: record, reason: reason)
                if let fresh {
                    url = try URLPolicy.validate(fresh)
                    record = try await persist { $0.remoteUrl = Redactor.redact(url: fresh) }
                    await rangeRefresh.adopt(url)   // the ranges' too
                }
                action = lifecycle.refreshed(found: fresh != nil, kept: PartialFile.length(at: partialURL))
            case let .backOff(error, delay, attempt, limit):
                context.hub.publish(.retrying(id: id, attempt: attempt, limit: limit, error: error, delay: delay))
                context.logger.info("retrying in \(delay) (failure \(attempt) of \(limit) since net progress, \(held) bytes held): \(error)", metadata: ["id": "\(id)"])
                try await config.clock.sleep(for: delay, .backoff)
                record = try await renewLeaseOrStop()   // still this run's after the wait?
                action = lifecycle.waited(kept: PartialFile.length(at: partialURL))
            case let .restartFromZero(reason):
                context.logger.notice("restarting from zero: \(reason)", metadata: ["id": "\(id)"])
                // The ranges and what tied the bytes to the server's file go in one write,
                // before the file: a stop between the two leaves a partial nothing vouches
                // for (started from zero), never a preallocated one without its ranges, whose
                // length a resume would trust (zeros completed; SegmentedTests).
                guard let reset = try await db.replaceSegments(id: id, with: [], lease: context.owner, { $0.resetToZero(countingAttempt: true) }) else {
                    throw ExternalStop()
                }
                record = reset
                rangeBudgets.withLock { $0.removeAll() }
                if let hook = config.duringRestart { await hook(); try Task.checkCancellation() }
                try await discardPartial(partialURL)
                context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: 0, totalBytes: nil)))
                action = lifecycle.restarted()
            case let .complete(done):
                return .completed(done)
            case let .fail(error), let .pause(error):
                // Ending badly is recorded by `run()`, which every escaping error reaches.
                throw error
            }
        }
    }

    /// One attempt, single-connection or segmented; a passing error thrown by it is an outcome.
    /// `partialLength`: the partial's length as the attempt begins.
    func attempt(record: DownloadRecord, url: URL, partialURL: URL, partialLength: Int64, finalURL: URL) async throws -> DownloadLifecycle.Outcome {
        // A finished file being revalidated counts only while it is still there, whole.
        let held = record.heldBytes.flatMap { bytes in
            PartialFile.length(at: finalURL) == bytes ? ResumePlan.HeldFile(etag: record.heldEtag, lastModified: record.heldLastModified) : nil
        }
        unsavedReply.set(nil)   // an earlier attempt's reply says nothing of this one's bytes
        let plan = ResumePlan(partialLength: partialLength, etag: record.etag, lastModified: record.lastModified,
                              totalBytes: record.totalBytes, resumable: record.resumable, held: held)
        if plan.discardsPartial {
            context.logger.info("discarding \(partialLength) kept bytes: nothing ties them to the server's file", metadata: ["id": "\(id)"])
        }
        do {
            if record.connections > 1, try await !db.segments(id: id).isEmpty {
                // A segmented download resumes every range from its persisted progress.
                return try await resumeSegmented(record: record, url: url)
                    ?? .restart("the saved ranges no longer describe the partial file")
            }
            return try await withIdleWatchdog(timeout: config.idleTimeout, clock: config.clock) { activity in
                try await attempt(url: url, plan: plan, record: record, activity: activity)
            }
        } catch let error as CourierError where error.isPassing {
            await recordUnsavedReply(partialURL: partialURL)
            return .retry(error, after: nil)
        } catch is CancellationError where !Task.isCancelled {
            // Nobody cancelled this run: a transport (or a library under it) gave up on the
            // request by itself. Ending the run here would leave the download queued with
            // nothing to run it, so it is a dropped connection, retried under the policy.
            return .retry(CourierError(.network, "the transport cancelled the request on its own"), after: nil)
        }
    }

    /// After an attempt that failed and will be retried: the validators of a small body's
    /// reply (not written before it), with the bytes its partial kept, so the retry asks for
    /// the rest. An attempt the idle watchdog aborted could not write them itself (its task
    /// was cancelled), and the retry threw the kept bytes away; one that wrote them already
    /// writes the same values again.
    func recordUnsavedReply(partialURL: URL) async {
        // A run being stopped keeps them for its stop (`run()` hands them to the pause or
        // shutdown); a write now would be refused by the cancellation, and they would be lost.
        guard !Task.isCancelled, let unsaved = unsavedReply.take() else { return }
        let length = PartialFile.length(at: partialURL)
        guard length > 0 else { return }
        await context.bestEffort("recording progress", id: id) {
            try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { unsaved(&$0); $0.bytesReceived = length }
        }
    }

    // MARK: Ending badly

    /// Records a failure; the partial stays (integrity failures discard it in `finish`).
    /// A partial found missing because another process deleted it with the download is a
    /// stop, not a failure.
    func fail(with error: CourierError) async -> RunOutcome {
        let owner = context.owner
        if error.code == .fileWrite, !Task.isCancelled, await partialWasTakenAway(error) { return .stoppedExternally }
        let kept = await keptBytes()
        let written = await context.bestEffort("recording the failure", id: id) { try await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { $0.fail(error, keeping: kept); $0.releaseLease(ifHeldBy: owner) } }
        if case .some(nil) = written { return await refusedEnd(error) }
        // The library's own account (a TLS library's, say) only in the log, never in the message.
        let detail = error.underlying.map { " (\(Redactor.redact(String(describing: $0))))" } ?? ""
        context.logger.warning("download failed: \(error)\(detail)", metadata: ["id": "\(id)"])
        return .failed(error)
    }

    /// Records a pause the engine chose (no space), keeping everything.
    func pause(with error: CourierError) async -> RunOutcome {
        let owner = context.owner
        let kept = await keptBytes()
        let written = await context.bestEffort("recording the pause", id: id) { try await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { $0.pause(keeping: kept, error: error); $0.releaseLease(ifHeldBy: owner) } }
        if case .some(nil) = written { return await refusedEnd(error) }
        context.logger.warning("download paused: \(error)", metadata: ["id": "\(id)"])
        return .paused(error)
    }

    /// A failure or pause whose write was refused: the download is no longer this run's
    /// (another process paused, cancelled or took it over while this run was ending, as a
    /// suspended process's run finds at its thaw). Its end is what the record says, not this
    /// run's error: announcing "failed" over a download another process was running ended
    /// its events while it went on (the simulator: seed 34009297).
    private func refusedEnd(_ error: CourierError) async -> RunOutcome {
        context.logger.info("not recorded, the download is no longer this run's: \(error)", metadata: ["id": "\(id)"])
        await dropOrphanedPartial()
        return .stoppedExternally
    }

    /// The bytes the partial holds now (its ranges' sum when segmented), when they can be told.
    func keptBytes() async -> Int64? {
        guard let record = await context.bestEffort("reading the record", id: id, { try await db.record(id: id) }) ?? nil else { return nil }
        let partial = context.fileURL(record.partialPath)
        return await context.bestEffort("counting kept bytes", id: id) { try await db.keptBytes(id: id, partial: partial) } ?? PartialFile.length(at: partial)
    }

    // MARK: Helpers

    /// The URL to ask: the full one this process was given, else the stored one — unless
    /// the stored one had its secrets redacted: then the refresher's, else `E_URL_NEEDED`.
    /// `token=REDACTED` is never sent.
    func usableURL(_ record: DownloadRecord) async throws -> String {
        if let liveURL { return liveURL }
        guard Redactor.isRedacted(url: record.remoteUrl) else { return record.remoteUrl }
        if let refresher = context.refresher(for: id), let fresh = try await refresher.refreshedURL(for: record, reason: .beforeResume) {
            return fresh
        }
        throw CourierError(.urlNeeded, "the URL of \(id) carried a secret, which is never stored: give the full URL again (or a URLRefreshing hook)")
    }

    func persist(_ change: @Sendable @escaping (inout DownloadRecord) -> Void) async throws -> DownloadRecord {
        guard let r = try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner, change) else { throw ExternalStop() }
        return r
    }

    func discardPartial(_ url: URL) async throws {
        unsavedReply.set(nil)   // its bytes are gone: what tied them to the server's file goes too
        try await Blocking.run { try PartialFile.deleteDurably(url) }
    }

    /// After `error`, a partial file found missing: whether another process deleted it with
    /// the download (its cancel deletes the partial first, then the record; a take-over
    /// leases the record): then the run was stopped, not failed. Unreadable: no (the file
    /// error stands). (A cancel whose record deletion has not landed yet reads as still
    /// this run's: that narrow window still ends failed.)
    func partialWasTakenAway(_ error: CourierError) async -> Bool {
        let stored = await context.bestEffort("reading the record", id: id) { try await db.record(id: id) }
        guard let stored else { return false }
        let taken = stored.map { $0.state != .downloading || context.owner.isBlocked(by: $0) } ?? true
        if taken { context.logger.info("the partial went with the download (\(error)): stopped", metadata: ["id": "\(id)"]) }
        return taken
    }

    /// Stopped externally: when the record is gone (cancelled elsewhere) or completed (by
    /// another run: a completed download has no partial), the partial this run opened goes
    /// too, if its path still names that file. (A cancel that landed while the run waited
    /// for its reply deleted nothing: the file did not exist yet. A stale run that opened a
    /// partial after another completed the download left it beside the file: found by the
    /// simulator.) Read in a task of its own: a stop may have cancelled this one. Paused or
    /// taken over instead, the file is kept for the next run.
    func dropOrphanedPartial() async {
        guard let opened = openedPartial.take() else { return }
        let unneeded: Bool
        switch await recordPastStop() {
        case .some(.none): unneeded = true
        case let .some(.some(record)): unneeded = record.state == .completed
        case .none: unneeded = false   // unreadable: the file stays
        }
        if unneeded {
            let url = opened.url, identity = opened.identity
            await context.bestEffort("deleting an orphaned partial", id: id) { try await Blocking.run { try PartialFile.deleteDurably(url, ifStill: identity) } }
        }
    }
}
