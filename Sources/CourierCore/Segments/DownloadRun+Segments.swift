import Foundation

/// A segmented download: the file split into byte ranges fetched over several connections
/// at once into one preallocated partial file, each range written at its own offset.
///
/// - Every range's progress is persisted (`courierSegment`) about once a second, together
///   with the record, so a relaunch resumes every range where it stopped.
/// - Every range's reply must be a 206 for exactly that range, of the same total, with the
///   validator the download started with (and `If-Range` makes a changed file answer 200):
///   anything else restarts the whole download, never splices two versions.
/// - When a connection frees up and no range waits, the range with the most bytes left is
///   split in two (aria2's scheme), so a slow connection does not hold up the end.
extension DownloadRun {
    /// What the ranges agree on: fixed when the download is split. The validator is chosen
    /// by the same rule as every resume (``Validator/choose(etag:lastModified:)``): a strong,
    /// well-formed ETag, else Last-Modified; an unquoted or weak ETag never is one.
    struct SegmentTerms: Sendable {
        var total: Int64
        var validator: Validator
    }

    /// Thrown by a range whose reply shows the file changed or ranges stopped working.
    struct SegmentRestart: Error { var reason: String }

    /// Whether a reply to `Range: bytes=0-` allows splitting the download.
    func canSegment(record: DownloadRecord, status: Int, plan: BodyPlan) -> Bool {
        guard record.connections > 1, status == 206, plan.offset == 0, plan.resumable, let total = plan.totalBytes,
              total >= 2 * config.minSegmentSize else { return false }
        return Validator.choose(etag: plan.etag, lastModified: plan.lastModified) != nil
    }

    /// Starts a segmented download from the first reply (a 206 from byte 0), which becomes
    /// the first range's connection.
    func startSegmented(firstBody: TransportBody, url: URL, plan: BodyPlan, record: DownloadRecord, activity: Activity) async throws -> AttemptOutcome {
        guard let validator = Validator.choose(etag: plan.etag, lastModified: plan.lastModified) else {
            throw SegmentRestart(reason: "no validator to split the file by")
        }
        let terms = SegmentTerms(total: plan.totalBytes ?? 0, validator: validator)
        let segments = SegmentPlanner.initial(downloadId: id, total: terms.total, connections: record.connections, minSize: config.minSegmentSize)
        let partialURL = context.fileURL(record.partialPath)
        try DiskSpace.check(toWrite: terms.total, at: partialURL, reserve: config.freeSpaceReserve)
        // The ranges are recorded before the file is preallocated: a partial of the full
        // length is never on disk without the segments that say what it holds.
        guard try await db.replaceSegments(id: id, with: segments, lease: context.owner, { r in
            r.totalBytes = terms.total; r.etag = plan.etag; r.lastModified = plan.lastModified
            r.contentType = plan.contentType ?? r.contentType
            r.resumable = true; r.bytesReceived = 0
        }) != nil else { throw ExternalStop() }
        // An older file's name gone for good before the new one takes it (a power cut must
        // not bring it back under these ranges: the simulator, seed 41009388's kind).
        try await Blocking.run { try PartialFile.deleteDurably(partialURL) }
        try PartialFile.preallocate(partialURL, length: terms.total)
        openedPartial.set(partialURL, PartialFile.identity(at: partialURL))
        activity.touch()
        context.logger.info("segmented: \(segments.count) ranges of a \(terms.total)-byte file", metadata: ["id": "\(id)"])
        return try await runSegments(SegmentBoard(segments), terms: terms, url: url, record: record, first: firstBody, outer: activity)
    }

    /// Resumes a segmented download from its persisted ranges; `nil` when they no longer
    /// describe the partial file (then the caller starts over).
    func resumeSegmented(record: DownloadRecord, url: URL) async throws -> AttemptOutcome? {
        let segments = try await db.segments(id: id)
        guard let total = record.totalBytes, SegmentPlanner.isConsistent(segments, total: total),
              PartialFile.length(at: context.fileURL(record.partialPath)) == total,
              let validator = Validator.choose(etag: record.etag, lastModified: record.lastModified) else { return nil }
        let terms = SegmentTerms(total: total, validator: validator)
        context.logger.info("resuming \(segments.filter { !$0.isComplete }.count) of \(segments.count) ranges", metadata: ["id": "\(id)"])
        return try await runSegments(SegmentBoard(segments), terms: terms, url: url, record: record, first: nil, outer: nil)
    }

    private enum WorkerEnd: Sendable { case rangeDone, ticker }

    /// `outer`: the attempt's idle watchdog, kept quiet while the ranges (each with its own
    /// watchdog) make progress.
    private func runSegments(_ board: SegmentBoard, terms: SegmentTerms, url: URL, record: DownloadRecord, first: TransportBody?, outer: Activity?) async throws -> AttemptOutcome {
        let partialURL = context.fileURL(record.partialPath)
        let connections = max(1, record.connections)
        let started = ContinuousClock.now
        let shared = RangeURL(url, refresh: rangeRefresh)
        do {
            try await withThrowingTaskGroup(of: WorkerEnd.self) { group in
                var first = first
                var active = 0
                func launch(_ segment: Segment) {
                    let body = first
                    first = nil
                    active += 1
                    group.addTask {
                        defer { board.release(segment.index) }
                        try await fetchRange(segment.index, board: board, terms: terms, url: shared, partialURL: partialURL, firstBody: body)
                        return .rangeDone
                    }
                }
                while active < connections, let segment = board.claimIdle() { launch(segment) }
                // Every range may already be whole (a kill after the last byte, before the
                // rename): then there is nothing to wait for.
                guard active > 0 else { return }
                group.addTask {
                    try await tick(board, terms: terms, partialURL: partialURL, started: started, outer: outer)
                    return .ticker
                }
                while let ended = try await group.next() {
                    guard case .rangeDone = ended else { continue }
                    active -= 1
                    if board.allComplete { break }
                    if let segment = board.claimIdle() ?? board.splitForIdleConnection(minSize: config.minSegmentSize) {
                        launch(segment)
                    }
                    if active == 0 { break }
                }
                group.cancelAll()
            }
        } catch {
            // Whatever stopped the ranges (pause, a lost connection, a kill of this task),
            // their flushed progress is persisted, from a task that is not cancelled.
            let snapshot = board.snapshot, run = self
            _ = await EngineExecutor.current.task {
                await run.context.bestEffort("saving the ranges' progress", id: run.id) { _ = try await run.saveRanges(snapshot, of: partialURL) }
            }.value
            if let restart = error as? SegmentRestart { return .restart(restart.reason) }
            throw error
        }

        guard board.allComplete else {
            throw CourierError(.shortBody, "the ranges ended before the file was whole")
        }
        // Every range is in the file: sync, record, verify, put in place.
        guard try await saveRanges(board.snapshot, of: partialURL) != nil else { throw ExternalStop() }
        var current = try await db.record(id: id) ?? record
        current.totalBytes = terms.total
        let outcome = try await finish(record: current, length: PartialFile.length(at: partialURL), hasher: nil)
        guard case .finished = outcome else {
            try await db.deleteSegments(id: id)
            return outcome
        }
        // Completed: a failure to forget the ranges no longer changes how the run ended (the
        // rows go with the record).
        await context.bestEffort("forgetting the ranges", id: id) { try await db.deleteSegments(id: id) }
        return outcome
    }

    /// Records the ranges' progress (and the record's bytes, their sum) once the partial is
    /// synced: the bytes a range's progress counts are on disk before the progress is. The
    /// partial is preallocated, so after a power cut a range resumed past bytes the disk lost
    /// would keep zeros there, and nothing else would tell (issue 29). `nil`: the record left
    /// `downloading`, or the lease is another's.
    private func saveRanges(_ ranges: [Segment], of partialURL: URL) async throws -> DownloadRecord? {
        try await Blocking.run { try PartialFile.sync(partialURL) }
        let received = ranges.reduce(0) { $0 + $1.received }
        return try await db.replaceSegments(id: id, with: ranges, lease: context.owner) { $0.bytesReceived = received }
    }

    /// Persists the ranges' progress about once a second and publishes progress events;
    /// stops the run when the record left `downloading` or the lease was lost.
    private func tick(_ board: SegmentBoard, terms: SegmentTerms, partialURL: URL, started: ContinuousClock.Instant, outer: Activity?) async throws {
        var meter = ProgressMeter()
        var lastPersist = config.clock.now
        var lastKept: Int64 = -1
        while true {
            try await config.clock.sleep(for: config.progressEventInterval, .progressTick)
            let now = config.clock.now
            let kept = board.received
            if kept != lastKept { outer?.touch(); lastKept = kept }
            meter.record(bytes: kept, at: (ContinuousClock.now - started).timeInterval)   // speed: real time
            context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: kept, totalBytes: terms.total,
                                                           bytesPerSecond: meter.bytesPerSecond, secondsRemaining: meter.secondsRemaining(total: terms.total))))
            if now - lastPersist >= config.progressPersistInterval {
                lastPersist = now
                guard try await saveRanges(board.snapshot, of: partialURL) != nil else {
                    throw ExternalStop()
                }
            }
        }
    }

    /// One connection's work on one range, with its own retries: request the rest of the
    /// range, check the reply, write at the range's offsets until its (possibly moved) end.
    private func fetchRange(_ index: Int, board: SegmentBoard, terms: SegmentTerms, url: RangeURL, partialURL: URL, firstBody: TransportBody?) async throws {
        // Net progress for a range: its bytes passing its mark (RetryBudget); the budget
        // outlives this attempt of the run (rangeBudgets).
        var retries = rangeBudgets.withLock { $0[index] } ?? RetryBudget(policy: config.retryPolicy, kept: board.segment(index)?.received ?? 0, jitter: config.retryJitter)
        var pending = firstBody
        while true {
            try Task.checkCancellation()
            guard let segment = board.segment(index), !segment.isComplete else { return }
            let body = pending
            pending = nil
            if body == nil {
                // Still this run's before a range is asked for (after a backoff, or a range
                // split off another): seed 3938901736. One guarded write per range request.
                try await renewLeaseOrStop()
            }
            do {
                try await withIdleWatchdog(timeout: config.idleTimeout, clock: config.clock) { activity in
                    let stream: TransportBody
                    if let body { stream = body } else { stream = try await requestRange(segment, terms: terms, url: url, activity: activity) }
                    try await writeRange(stream, index: index, from: segment.next, board: board, partialURL: partialURL, activity: activity)
                }
                return
            } catch let failure as RangeRetry {
                try await backOff(index, failure.error, after: failure.after, kept: board.segment(index)?.received ?? 0, size: segment.end - segment.start, retries: &retries)
            } catch let error as CourierError where error.isPassing {
                try await backOff(index, error, after: nil, kept: board.segment(index)?.received ?? 0, size: segment.end - segment.start, retries: &retries)
            }
        }
    }

    /// A range's passing failure, with the server's `Retry-After` when it gave one.
    private struct RangeRetry: Error { var error: CourierError; var after: TimeInterval? }

    /// Counts a range's failure by the same ``RetryBudget`` as a whole download's, and waits
    /// before its next attempt; throws once the range has failed too often in a row.
    private func backOff(_ index: Int, _ error: CourierError, after: TimeInterval?, kept: Int64, size: Int64, retries: inout RetryBudget) async throws {
        let delay: Duration
        let verdict = retries.failed(error, retryAfter: after, kept: kept, size: size)
        rangeBudgets.withLock { [retries] in $0[index] = retries }
        switch verdict {
        case let .wait(wait, _, _): delay = wait
        case let .giveUp(attempts):
            throw CourierError(error.code, "\(error.message) (range \(index), gave up after \(attempts) attempts without progress)", httpStatus: error.httpStatus)
        }
        context.logger.info("range \(index): retrying in \(delay): \(error)", metadata: ["id": "\(id)"])
        try await config.clock.sleep(for: delay, .backoff)
    }

    /// Asks for the rest of a range and checks the reply is exactly that range of the same
    /// file, by ``RangeReply``'s rules; redirects by ``RedirectState``'s.
    private func requestRange(_ segment: Segment, terms: SegmentTerms, url shared: RangeURL, activity: Activity) async throws -> TransportBody {
        var redirects = RedirectState(url: await shared.current, limit: config.maxRedirects)
        while true {
            var headers: [(name: String, value: String)] = [("Accept-Encoding", "identity"), ("Range", segment.rangeHeader),
                                                            ("If-Range", terms.validator.ifRangeValue)]
            if redirects.sendsCredentials, let authorizer = context.authorizer(for: id), let record = try await db.record(id: id) {
                headers += try await authorizer.headers(for: record, url: redirects.current)
            }
            var request = try TransportRequest(url: redirects.current.absoluteString, headers: headers)
            request.ownConnection = true
            let response = try await context.transport.send(request)
            activity.touch()
            switch RangeReply.decide(first: segment.next, last: segment.end - 1, total: terms.total, validator: terms.validator,
                                     status: response.status, headers: response.headerFields) {
            case .write:
                await shared.served(by: redirects.origin)
                return response.body
            case let .restart(reason):
                await response.body.drain()
                throw SegmentRestart(reason: reason)
            case let .redirect(location):
                await response.body.drain()
                try redirects.follow(location)
            case let .retry(error, after):
                await response.body.drain()
                throw RangeRetry(error: error, after: after)
            case let .refreshURL(error):
                await response.body.drain()
                // One fresh URL for every range (asked once per run); the range goes on with it.
                let denied = redirects.origin
                guard let fresh = try await shared.afterDenial(of: denied, ask: { try await refreshedURL(after: error) }) else { throw error }
                redirects = RedirectState(url: fresh, limit: config.maxRedirects)
            case let .fail(error):
                await response.body.drain()
                throw error
            }
        }
    }

    /// The URL refresher's fresh URL after a denial (recorded, redacted), or `nil`.
    private func refreshedURL(after error: CourierError) async throws -> String? {
        guard let refresher = context.refresher(for: id), let record = try await db.record(id: id),
              let fresh = try await refresher.refreshedURL(for: record, reason: .accessDenied(status: error.httpStatus ?? 403)) else { return nil }
        _ = try await persist { $0.remoteUrl = Redactor.redact(url: fresh) }
        return fresh
    }

    /// Writes a range's body at its offsets, up to the range's current end.
    private func writeRange(_ body: TransportBody, index: Int, from offset: Int64, board: SegmentBoard, partialURL: URL, activity: Activity) async throws {
        let file = try PartialFile(segmentOf: partialURL, writingAt: offset, bufferSize: config.segmentBufferSize)
        defer {
            try? file.flush()   // the range's error (or success) is already decided; flushed bytes are counted below
            board.advance(index, position: file.logicalLength, flushed: file.flushedLength)
            try? file.close()   // flushed just above; this only releases the descriptor
        }
        // Flushed at least twice per persist interval, so a kill loses about a second of a
        // range, not a whole buffer.
        let clock = config.clock
        var lastFlush = clock.now
        let flushEvery = config.progressPersistInterval / 2
        var received: Int64 = 0
        defer { bodyBytes.withLock { [received] in $0 += received } }
        for try await buffer in body {
            activity.touch()
            received += Int64(buffer.count)
            if clock.now - lastFlush >= flushEvery {
                try file.checkpoint()
                lastFlush = clock.now
            }
            let end = board.end(of: index)
            let keep = Int(max(0, min(Int64(buffer.count), end - file.logicalLength)))
            if keep > 0 {
                try buffer.withUnsafeBytes { raw in try file.append(UnsafeRawBufferPointer(rebasing: raw[0..<keep])) }
                board.advance(index, position: file.logicalLength, flushed: file.flushedLength)
                try await limiter?.consume(keep, activity: activity)
            }
            // The range is whole (a split may have brought its end closer): stop here; the
            // rest of this reply belongs to another connection. Flushed here, so its error
            // is the range's: a full disk, met only now by a range that fit in the buffer,
            // was swallowed by the flush on the way out, and the range asked again at once,
            // forever (the simulator's full disk: seed 23089268, 492 requests).
            if file.logicalLength >= end { try file.flush(); return }
        }
        try file.flush()
        if file.logicalLength < board.end(of: index) {
            throw CourierError(.shortBody, "a range ended at \(file.logicalLength), before its end \(board.end(of: index))")
        }
    }
}
