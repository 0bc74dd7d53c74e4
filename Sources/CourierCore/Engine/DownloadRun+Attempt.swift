import Crypto
import Foundation

/// One single-connection attempt: the request, the reply judged by `HTTP/`, the body written.
extension DownloadRun {
    /// A body from zero up to this length is small: its partial stays unnamed until
    /// something relies on its bytes, and its validators are written only with its completion.
    static let smallBody: Int64 = 1 << 20

    // MARK: What an attempt came to

    /// The bytes the partial holds: its length, or for a segmented download (preallocated
    /// to its full size) its ranges' sum, read only then (a single connection's costs a stat,
    /// none when the caller has just taken the `length`).
    func heldBytes(_ record: DownloadRecord, _ partialURL: URL, length: Int64? = nil) async throws -> Int64 {
        record.connections > 1 ? try await db.keptBytes(id: id, partial: partialURL) : length ?? PartialFile.length(at: partialURL)
    }

    /// Records an attempt that did not finish: a failure is counted and remembered whether
    /// or not the lifecycle gave up on it (a bounded reply that added nothing backs off as
    /// one), with the bytes it threw away. The stored record, or `nil` when nothing was written.
    func recordAttempt(_ outcome: AttemptOutcome, _ action: DownloadLifecycle.Action, kept: Int64, discarded: Int64) async throws -> DownloadRecord? {
        let failure: CourierError?
        switch (outcome, action) {
        case let (.retry(error, _), _), let (_, .backOff(error, _, _, _)): failure = error
        default: failure = nil
        }
        if let failure { return try await persist { $0.noteFailedAttempt(failure, keeping: kept, discarded: discarded) } }
        if discarded > 0 { return try await persist { $0.bytesDiscarded += discarded } }
        return nil
    }

    // MARK: One attempt

    func attempt(url: URL, plan: ResumePlan, record: DownloadRecord, activity: Activity) async throws -> AttemptOutcome {
        var redirects = RedirectState(url: url, limit: config.maxRedirects)
        while true {
            var headers = plan.requestHeaders
            // A download wanting several connections asks for a range from the start: a 206
            // shows the server serves ranges, and the reply becomes the first range's.
            if record.connections > 1, plan.offset == 0 { headers.append(("Range", "bytes=0-")) }
            if redirects.sendsCredentials, let authorizer = context.authorizer(for: id) {
                headers += try await authorizer.headers(for: record, url: redirects.current)
            }
            let current = redirects.current
            let response = try await context.transport.send(try TransportRequest(url: current.absoluteString, headers: headers))
            activity.touch()
            switch ResponseDisposition.decide(plan: plan, status: response.status, headers: response.headerFields) {
            case let .redirect(location):
                await response.body.drain()
                do { try redirects.follow(location) } catch let error as CourierError where error.code == .tooManyRedirects { return .fail(error) }
            case let .write(reply):
                let bodyPlan: BodyPlan
                do { bodyPlan = try reply.holding(to: record.expectedBytes) } catch {
                    await response.body.drain()
                    return try await failDiscarding(error, record: record, contentType: reply.contentType)
                }
                if canSegment(record: record, status: response.status, plan: bodyPlan) {
                    return try await startSegmented(firstBody: response.body, url: current, plan: bodyPlan, record: record, activity: activity)
                }
                return try await writeBody(response.body, plan: bodyPlan, record: record, activity: activity)
            case let .alreadyComplete(total):
                await response.body.drain()
                var done = record
                done.totalBytes = total
                return try await finish(record: done, length: total, hasher: nil)
            case .notModified:
                // The file in place is the server's current one: it stays, as it was.
                await response.body.drain()
                try await discardPartial(context.fileURL(record.partialPath))
                var kept = record
                kept.etag = record.heldEtag; kept.lastModified = record.heldLastModified
                try Self.stopIdleWatch()
                guard let bytes = record.heldBytes, let done = try await markCompleted(length: bytes, validators: kept) else { throw ExternalStop() }
                return .finished(done)
            case let .restart(reason):
                await response.body.drain()
                return .restart(reason)
            case let .retry(error, after):
                await response.body.drain()
                return .retry(error, after: after)
            case let .refreshURL(error):
                await response.body.drain()
                return .refresh(error)
            case let .fail(error):
                await response.body.drain()
                return .fail(error)
            }
        }
    }

    func writeBody(_ body: TransportBody, plan: BodyPlan, record: DownloadRecord, activity: Activity) async throws -> AttemptOutcome {
        let partialURL = context.fileURL(record.partialPath)
        if let max = config.maxFileSize, let total = plan.totalBytes, total > max {
            return .fail(CourierError(.bodyTooLong, "the file is \(total) bytes, over the \(max)-byte limit"))
        }
        try DiskSpace.check(toWrite: plan.expectedBodyLength ?? 0, at: partialURL, reserve: config.freeSpaceReserve)

        // A small file from zero keeps nothing across a kill (its validators are recorded with
        // its completion): its partial is named only when something relies on its bytes
        // (DownloadRun+UnnamedPartial). Not with an app's completion hook: its transaction
        // renames a partial that has a name, which another process's cancel can delete.
        let small = plan.offset == 0 && (plan.expectedBodyLength.map { $0 <= Self.smallBody } ?? false)
        let unnamed = small && context.completionHooks.hook(for: id) == nil
        // What earlier attempts left: a short body of unannounced length must add to it
        // (read first: a new unnamed partial deletes it).
        let heldEarlier = unnamed && plan.totalBytes == nil ? PartialFile.length(at: partialURL) : nil
        // A partial with a name is opened (and cut to the reply's offset) only while the
        // download is still this run's: another process may have paused, resumed or
        // completed it while this run waited for the reply, and a stale run cut the partial
        // another was writing, or left one beside a completed file (found by the simulator).
        // A guarded write renews the lease; refused, the run stops. Not needed for a small
        // body's new unnamed partial (out of every other run's reach; checked when it gets a
        // name), unless a file is at the path (the unnamed open deletes it) or the system
        // has no unnamed files (Apple platforms: it is named, and cut, at once).
        let oldFile = unnamed && PartialFile.opensUnnamed && FileManager.default.fileExists(atPath: partialURL.path)
        if !unnamed || !PartialFile.opensUnnamed || oldFile {
            try await renewLeaseOrStop()
        }
        if oldFile { try await Blocking.run { try PartialFile.deleteDurably(partialURL) } }   // for good: its name must not come back over this one
        let file = try unnamed ? PartialFile(unnamedAt: partialURL, bufferSize: config.writeBufferSize)
            : PartialFile(url: partialURL, bufferSize: config.writeBufferSize, directIO: config.usesDirectIO)
        defer { try? file.close() }   // every successful path closed it already; this only releases the descriptor
        if !file.isUnnamed { openedPartial.set(partialURL, file.openIdentity) }   // (an unnamed one has rules of its own)
        let heldBefore = heldEarlier ?? file.logicalLength
        if file.logicalLength != plan.offset { try file.truncate(to: plan.offset) }
        var hasher: SHA256? = nil
        if record.expectedSHA256 != nil { hasher = try Self.hasher(prefixOf: partialURL, length: plan.offset) }

        // The reply's validators are persisted before the body, so a kill midway can resume;
        // for a small file from zero that write is skipped (a kill costs at most 1 MiB) and
        // they are recorded with completion, one write instead of two; a pause, shutdown or
        // hand-off midway records them with the kept bytes (`UnsavedReply`).
        let setPlan: @Sendable (inout DownloadRecord) -> Void = { r in
            r.etag = plan.etag
            r.lastModified = plan.lastModified
            r.totalBytes = plan.totalBytes
            r.resumable = plan.resumable
            r.bytesReceived = plan.offset
            r.contentType = plan.contentType ?? r.contentType
        }
        var current = record
        if small {
            setPlan(&current)
            unsavedReply.set(setPlan)   // a stop midway records them with the kept bytes
        } else {
            current = try await persist(setPlan)
        }
        context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: plan.offset, totalBytes: plan.totalBytes)))

        let clock = config.clock
        var lastPersist = clock.now
        let ticker = context.ticker.start(id: id, offset: plan.offset, total: plan.totalBytes)
        defer { context.ticker.stop(ticker) }
        var received: Int64 = 0
        defer { bodyBytes.withLock { [received] in $0 += received } }
        let limit = config.maxFileSize

        do {
            for try await buffer in body {
                activity.touch()
                let n = Int64(buffer.count)
                if file.wouldWait(appending: buffer.count) { try await file.settle() }
                if let expected = plan.expectedBodyLength, received + n > expected {
                    // Keep only what the server announced; the rest is not this file.
                    let keep = Int(expected - received)
                    try buffer.withUnsafeBytes { raw in
                        let part = UnsafeRawBufferPointer(rebasing: raw[0..<keep])
                        try file.appendPipelined(part)
                        hasher?.update(bufferPointer: part)
                    }
                    try await file.settle()
                    try file.flush()
                    throw CourierError(.bodyTooLong, "the server sent more than the \(expected) bytes it announced")
                }
                if let size = record.expectedBytes, plan.offset + received + n > size {
                    throw CourierError(.sizeMismatch, "the body runs past the \(size) bytes expected")
                }
                if let limit, plan.offset + received + n > limit {
                    throw CourierError(.bodyTooLong, "the body runs past the \(limit)-byte limit")
                }
                try buffer.withUnsafeBytes { raw in
                    try file.appendPipelined(raw)
                    hasher?.update(bufferPointer: raw)
                }
                received += n
                ticker.note(file.logicalLength)
                try await limiter?.consume(Int(n), activity: activity)
                let now = clock.now
                if now - lastPersist >= config.progressPersistInterval {
                    lastPersist = now
                    try await file.settle()
                    try await nameUnnamed(file)   // a small file's: the record claims bytes under its name
                    let length = try file.checkpoint()   // bytes reach the file before the record claims them
                    // With the reply's validators: for a small file they were not written before
                    // the body, and `current` becomes this stored record.
                    guard let updated = try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner, { setPlan(&$0); $0.bytesReceived = length }) else {
                        throw ExternalStop()
                    }
                    current = updated
                }
            }
        } catch {
            // Every way out waits for the background write first (a failed one cuts the file
            // back to where it began), then writes what is staged.
            try? await file.settle()   // already failing: the error that brought us here is the one reported
            try? file.flush()   // already failing: the error that brought us here is the one reported
            if error is ExternalStop { throw error }
            let named = try await keepUnnamedBytes(file)
            // (A `CancellationError` nobody asked for, from the transport, is a dropped
            // connection: what arrived is recorded like any other's.)
            if Task.isCancelled { throw error }
            // Persist what we have before reporting the failure, with the reply's validators
            // (a small file's were not written before its body): the next attempt resumes.
            let length = named ? file.logicalLength : 0
            await context.bestEffort("recording progress", id: id) { try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { setPlan(&$0); $0.bytesReceived = length } }
            // Too long: kept for a resume under a larger limit, unless the body cannot be
            // resumed (content-coded, a decompression bomb): then nothing of it is any use.
            if let e = error as? CourierError, e.code == .bodyTooLong { return plan.resumable ? .fail(e) : try await failDiscarding(e, record: current) }
            if let e = error as? CourierError, e.code == .sizeMismatch { return try await failDiscarding(e, record: current) }
            throw error
        }

        try await file.settle()
        try file.flush()
        let length = file.logicalLength
        context.ticker.stop(ticker)
        context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: length, totalBytes: plan.totalBytes,
                                                       bytesPerSecond: 0, secondsRemaining: 0)))
        let whole = (plan.expectedBodyLength.map { received >= $0 } ?? true) && (plan.totalBytes.map { length >= $0 } ?? true)
        // Short of whole, the record claims the bytes: a small file's partial is named first.
        // (Whole, it is put in place unnamed: `markCompleted`.)
        if !whole || (plan.totalBytes == nil && record.expectedBytes.map { length < $0 } == true) {
            guard try await keepUnnamedBytes(file) else { throw CourierError(.writeFailed, "the partial file \(partialURL.lastPathComponent) could not be named") }
        }
        if !whole {
            current = try await persist { setPlan(&$0); $0.bytesReceived = length }
            if let expected = plan.expectedBodyLength, received < expected {
                throw CourierError(.shortBody, "the body ended after \(received) of \(expected) announced bytes")
            }
            return .needsMore
        }
        if plan.totalBytes == nil, let size = record.expectedBytes, length < size {
            // Unannounced length, ended short of the caller's size: a cut connection looks
            // the same as a clean end. Resumed while a validator ties the bytes and each reply
            // adds to them; else (a page, a smaller file, a server that ignores ranges) failed.
            guard plan.resumable, plan.etag != nil || plan.lastModified != nil, length > heldBefore else {
                return try await failDiscarding(CourierError(.sizeMismatch, "the file has \(length) bytes, \(size) were expected"), record: current, contentType: plan.contentType)
            }
            current = try await persist { setPlan(&$0); $0.bytesReceived = length }
            return .needsMore
        }
        // Whole: the completed write below records the length; no progress write before it.
        current.bytesReceived = length
        if plan.totalBytes == nil { current.totalBytes = length }
        // Synced when it is put in place (with the rename in one blocking job, or before
        // the app's completion hook's transaction).
        return try await finish(record: current, length: length, hasher: hasher, unsynced: file)
    }
}
