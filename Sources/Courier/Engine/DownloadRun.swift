import Crypto
import Foundation
import Logging
import NIOCore

/// One download's run: requests, retries, writes and the atomic finish, until the file is
/// complete, fails for good, pauses, or the task is cancelled.
struct DownloadRun: Sendable {
    let id: String
    let context: EngineContext
    /// The URL with its secrets, known only to this process (the record stores it redacted).
    var liveURL: String? = nil
    /// The download's byte-rate limit, shared by its connections (`nil`: none).
    var limiter: RateLimiter? = nil

    /// What one attempt (a request and its body) came to.
    enum AttemptOutcome: Sendable {
        case finished(DownloadRecord)
        /// The body ended before the whole file arrived (a bounded 206): ask again.
        case needsMore
        case restart(String)
        case retry(CourierError, after: TimeInterval?)
        case refresh(CourierError)
        case fail(CourierError)
    }

    var config: DownloaderConfiguration { context.configuration }
    var db: CourierDatabase { context.database }

    func run() async -> RunOutcome {
        do {
            return try await withLeaseHeartbeat { try await loop() }
        } catch is CancellationError {
            return .interrupted
        } catch is LeasedElsewhere {
            return .leasedElsewhere
        } catch is ExternalStop {
            return .stoppedExternally
        } catch let error as CourierError {
            if Task.isCancelled { return .interrupted }
            if error.code == .noSpace { return await pause(with: error) }
            return await fail(with: error)
        } catch {
            if Task.isCancelled { return .interrupted }
            return await fail(with: CourierError(.fileWrite, "unexpected error", underlying: error))
        }
    }

    /// Runs `body` while a heartbeat renews the lease; a lost lease (another process took
    /// it over, or the record left `downloading`) stops the body.
    private func withLeaseHeartbeat(_ body: @escaping @Sendable () async throws -> RunOutcome) async throws -> RunOutcome {
        try await withThrowingTaskGroup(of: RunOutcome?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                let owner = context.owner
                while true {
                    try await Task.sleep(for: config.leaseDuration / 3)
                    let expiry = context.leaseExpiry()
                    let renewed = try await db.update(id: id, ifStateIn: [.downloading], lease: owner) { r in
                        r.leaseOwner = owner.id
                        r.leaseExpiresAt = expiry
                    }
                    if renewed == nil { throw ExternalStop() }
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }

    private func loop() async throws -> RunOutcome {
        // The claim: queued (or interrupted, paused, failed) to downloading, with this
        // downloader's lease, in one transaction; refused while another lease is in force.
        let owner = context.owner
        let expiry = context.leaseExpiry()
        guard var record = try await db.update(id: id, ifStateIn: [.queued, .downloading, .paused, .failed], lease: owner, { r in
            r.state = .downloading
            r.lastErrorCode = nil
            r.lastErrorMessage = nil
            r.leaseOwner = owner.id
            r.leaseExpiresAt = expiry
        }) else {
            if let current = try await db.record(id: id), owner.isBlocked(by: current) { throw LeasedElsewhere() }
            throw ExternalStop()
        }
        context.hub.publish(.stateChanged(id: id, state: .downloading, error: nil))

        let partialURL = context.fileURL(record.partialPath)
        let finalURL = context.fileURL(record.localFinalPath)

        // Killed between the rename and the record update: the final file is whole. (Not
        // while revalidating without a checksum: the file in place may still be the old
        // version, of the same size; asking again is the safe way to tell.)
        if PartialFile.length(at: partialURL) == 0, let total = record.totalBytes, total > 0,
           record.heldBytes == nil || record.expectedSHA256 != nil,
           PartialFile.length(at: finalURL) == total,
           try record.expectedSHA256 == nil || Self.sha256(of: finalURL, length: total) == record.expectedSHA256 {
            if let done = try await markCompleted(length: total) { return .completed(done) }
            throw ExternalStop()
        }

        var url = try URLPolicy.validate(try await usableURL(record))
        var failures = 0
        var refusals = 0
        var restarts = 0
        var refreshedBeforeResume = false
        var refreshedAfterDenial = false

        while true {
            try Task.checkCancellation()
            let partialLength = PartialFile.length(at: partialURL)
            if partialLength > 0, !refreshedBeforeResume, let refresher = context.refresher {
                refreshedBeforeResume = true
                if let fresh = try await refresher.refreshedURL(for: record, reason: .beforeResume) {
                    url = try URLPolicy.validate(fresh)
                    record = try await persist { $0.remoteUrl = Redactor.redact(url: fresh) }
                }
            }
            // A finished file being revalidated counts only while it is still there, whole.
            let held = record.heldBytes.flatMap { bytes in
                PartialFile.length(at: finalURL) == bytes ? ResumePlan.HeldFile(etag: record.heldEtag, lastModified: record.heldLastModified) : nil
            }
            let plan = ResumePlan(partialLength: partialLength, etag: record.etag, lastModified: record.lastModified,
                                  totalBytes: record.totalBytes, resumable: record.resumable, held: held)
            if plan.discardsPartial {
                context.logger.info("discarding \(partialLength) kept bytes: nothing ties them to the server's file", metadata: ["id": "\(id)"])
            }
            let snapshot = record
            let attemptURL = url
            let outcome: AttemptOutcome
            do {
                if record.connections > 1, try await !db.segments(id: id).isEmpty {
                    // A segmented download resumes every range from its persisted progress.
                    outcome = try await resumeSegmented(record: snapshot, url: attemptURL)
                        ?? .restart("the saved ranges no longer describe the partial file")
                } else {
                    outcome = try await withIdleWatchdog(timeout: config.idleTimeout) { activity in
                        try await attempt(url: attemptURL, plan: plan, record: snapshot, activity: activity)
                    }
                }
            } catch let error as CourierError where Self.isRetriable(error) {
                outcome = .retry(error, after: nil)
            }
            record = try await db.record(id: id) ?? record

            switch outcome {
            case let .finished(done):
                return .completed(done)
            case .needsMore:
                failures = 0
                continue
            case let .restart(reason):
                restarts += 1
                context.logger.notice("restarting from zero: \(reason)", metadata: ["id": "\(id)"])
                if restarts > config.maxRestarts {
                    throw CourierError(.protocolViolation, "gave up after \(restarts - 1) restarts: \(reason)")
                }
                try await db.deleteSegments(id: id)
                try discardPartial(partialURL)
                record = try await persist { r in
                    r.bytesReceived = 0; r.etag = nil; r.lastModified = nil; r.totalBytes = nil; r.resumable = true
                    r.attemptCount += 1
                }
                context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: 0, totalBytes: nil)))
            case let .retry(error, after):
                // An attempt that moved the partial forward starts the failure count afresh.
                if PartialFile.length(at: partialURL) > partialLength { failures = 0 }
                failures += 1
                record = try await persist { r in
                    r.attemptCount += 1
                    r.lastErrorCode = error.code.rawValue
                    r.lastErrorMessage = error.message
                    r.bytesReceived = PartialFile.length(at: partialURL)
                }
                refusals = error.code == .connectionRefused ? refusals + 1 : 0
                let limit = error.code == .connectionRefused ? min(config.retryPolicy.maxRefusedAttempts, config.retryPolicy.maxAttempts) : config.retryPolicy.maxAttempts
                let attempt = error.code == .connectionRefused ? refusals : failures
                if attempt >= limit {
                    throw CourierError(error.code, "\(error.message) (gave up after \(attempt) attempts)", httpStatus: error.httpStatus)
                }
                let delay = config.retryPolicy.delay(afterFailures: failures, retryAfter: after)
                context.hub.publish(.retrying(id: id, attempt: attempt, limit: limit, error: error, delay: delay))
                context.logger.info("retrying in \(delay): \(error)", metadata: ["id": "\(id)"])
                try await Task.sleep(for: delay)
            case let .refresh(error):
                guard !refreshedAfterDenial, let refresher = context.refresher,
                      let fresh = try await refresher.refreshedURL(for: record, reason: .accessDenied(status: error.httpStatus ?? 403)) else {
                    throw error
                }
                refreshedAfterDenial = true
                url = try URLPolicy.validate(fresh)
                record = try await persist { $0.remoteUrl = Redactor.redact(url: fresh) }
            case let .fail(error):
                throw error
            }
        }
    }

    // MARK: One attempt

    private func attempt(url: URL, plan: ResumePlan, record: DownloadRecord, activity: Activity) async throws -> AttemptOutcome {
        var redirects = RedirectState(url: url, limit: config.maxRedirects)
        while true {
            var headers = plan.requestHeaders
            // A download wanting several connections asks for a range from the start: a 206
            // shows the server serves ranges, and the reply becomes the first range's.
            if record.connections > 1, plan.offset == 0 { headers.append(("Range", "bytes=0-")) }
            if redirects.sendsCredentials, let authorizer = context.authorizer {
                headers += try await authorizer.headers(for: record, url: redirects.current)
            }
            let current = redirects.current
            let response = try await context.transport.send(TransportRequest(url: current.absoluteString, headers: headers))
            activity.touch()
            switch ResponseDisposition.decide(plan: plan, status: response.status, headers: response.headers) {
            case let .redirect(location):
                await response.body.drain()
                do { try redirects.follow(location) } catch let error as CourierError where error.code == .tooManyRedirects { return .fail(error) }
            case let .write(bodyPlan):
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
                try discardPartial(context.fileURL(record.partialPath))
                var kept = record
                kept.etag = record.heldEtag; kept.lastModified = record.heldLastModified
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

    private func writeBody(_ body: TransportBody, plan: BodyPlan, record: DownloadRecord, activity: Activity) async throws -> AttemptOutcome {
        let partialURL = context.fileURL(record.partialPath)
        if let max = config.maxFileSize, let total = plan.totalBytes, total > max {
            return .fail(CourierError(.bodyTooLong, "the file is \(total) bytes, over the \(max)-byte limit"))
        }
        if let expected = plan.expectedBodyLength, let available = DiskSpace.available(at: partialURL) {
            let needed = expected + config.freeSpaceReserve
            if available < needed {
                throw CourierError(.noSpace, "not enough free space: \(expected) bytes to come plus a \(config.freeSpaceReserve)-byte reserve, \(available) available")
            }
        }

        let file = try PartialFile(url: partialURL, bufferSize: config.writeBufferSize)
        defer { try? file.close() }
        if file.logicalLength != plan.offset { try file.truncate(to: plan.offset) }
        var hasher: SHA256? = nil
        if record.expectedSHA256 != nil { hasher = try Self.hasher(prefixOf: partialURL, length: plan.offset) }

        // The reply's validators are persisted before the body, so a kill midway can resume;
        // for a small file from zero that write is skipped (a kill costs at most 1 MiB) and
        // they are recorded with completion, one write instead of two.
        let setPlan: @Sendable (inout DownloadRecord) -> Void = { r in
            r.etag = plan.etag
            r.lastModified = plan.lastModified
            r.totalBytes = plan.totalBytes
            r.resumable = plan.resumable
            r.bytesReceived = plan.offset
        }
        var current = record
        if plan.offset == 0, let expected = plan.expectedBodyLength, expected <= 1 << 20 {
            setPlan(&current)
        } else {
            current = try await persist(setPlan)
        }
        context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: plan.offset, totalBytes: plan.totalBytes)))

        let clock = ContinuousClock()
        let started = clock.now
        var lastPersist = started
        var lastEvent = started
        var meter = ProgressMeter()
        meter.record(bytes: plan.offset, at: 0)
        var received: Int64 = 0
        let limit = config.maxFileSize

        do {
            for try await buffer in body {
                activity.touch()
                let n = Int64(buffer.readableBytes)
                if file.wouldWait(appending: buffer.readableBytes) { try await file.settle() }
                if let expected = plan.expectedBodyLength, received + n > expected {
                    // Keep only what the server announced; the rest is not this file.
                    let keep = Int(expected - received)
                    try buffer.withUnsafeReadableBytes { raw in
                        let part = UnsafeRawBufferPointer(rebasing: raw[0..<keep])
                        try file.appendPipelined(part)
                        hasher?.update(bufferPointer: part)
                    }
                    try await file.settle()
                    try file.flush()
                    throw CourierError(.bodyTooLong, "the server sent more than the \(expected) bytes it announced")
                }
                if let limit, plan.offset + received + n > limit {
                    throw CourierError(.bodyTooLong, "the body runs past the \(limit)-byte limit")
                }
                try buffer.withUnsafeReadableBytes { raw in
                    try file.appendPipelined(raw)
                    hasher?.update(bufferPointer: raw)
                }
                received += n
                try await limiter?.consume(Int(n), activity: activity)
                let now = clock.now
                if now - lastEvent >= config.progressEventInterval {
                    lastEvent = now
                    let t = (now - started).timeInterval
                    meter.record(bytes: file.logicalLength, at: t)
                    context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: file.logicalLength, totalBytes: plan.totalBytes,
                                                                   bytesPerSecond: meter.bytesPerSecond, secondsRemaining: meter.secondsRemaining(total: plan.totalBytes))))
                }
                if now - lastPersist >= config.progressPersistInterval {
                    lastPersist = now
                    try await file.settle()
                    let length = try file.checkpoint()   // bytes reach the file before the record claims them
                    guard let updated = try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner, { $0.bytesReceived = length }) else {
                        throw ExternalStop()
                    }
                    current = updated
                }
            }
        } catch {
            // Every way out waits for the background write first (a failed one cuts the file
            // back to where it began), then writes what is staged.
            try? await file.settle()
            try? file.flush()
            if error is CancellationError || Task.isCancelled || error is ExternalStop { throw error }
            // Persist what we have before reporting the failure.
            let length = file.logicalLength
            _ = try? await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { $0.bytesReceived = length }
            if let e = error as? CourierError, e.code == .bodyTooLong { return .fail(e) }
            throw error
        }

        try await file.settle()
        try file.flush()
        let length = file.logicalLength
        context.hub.publish(.progress(DownloadProgress(id: id, bytesReceived: length, totalBytes: plan.totalBytes,
                                                       bytesPerSecond: meter.bytesPerSecond, secondsRemaining: 0)))
        let whole = (plan.expectedBodyLength.map { received >= $0 } ?? true) && (plan.totalBytes.map { length >= $0 } ?? true)
        if !whole {
            current = try await persist { $0.bytesReceived = length }
            if let expected = plan.expectedBodyLength, received < expected {
                throw CourierError(.shortBody, "the body ended after \(received) of \(expected) announced bytes")
            }
            return .needsMore
        }
        // Whole: the completed write below records the length; no progress write before it.
        current.bytesReceived = length
        if plan.totalBytes == nil { current.totalBytes = length }
        // fsync blocks: on NIO's thread pool, not on one of the few cooperative threads.
        try await file.syncAndClose()
        return try await finish(record: current, length: length, hasher: hasher)
    }

    // MARK: Finishing

    func finish(record: DownloadRecord, length: Int64, hasher: SHA256?) async throws -> AttemptOutcome {
        let partialURL = context.fileURL(record.partialPath)
        let finalURL = context.fileURL(record.localFinalPath)
        if let total = record.totalBytes, total != length {
            try discardPartial(partialURL)
            _ = try? await persist { r in r.bytesReceived = 0; r.etag = nil; r.lastModified = nil; r.totalBytes = nil }
            return .fail(CourierError(.sizeMismatch, "the file has \(length) bytes, the server announced \(total)"))
        }
        if let expected = record.expectedSHA256 {
            let actual: String
            if let hasher {
                actual = Self.hex(hasher.finalize())
            } else {
                actual = try Self.sha256(of: partialURL, length: length)
            }
            guard actual == expected else {
                try discardPartial(partialURL)
                _ = try? await persist { r in r.bytesReceived = 0; r.etag = nil; r.lastModified = nil; r.totalBytes = nil }
                return .fail(CourierError(.checksumMismatch, "SHA-256 mismatch: expected \(expected), got \(actual); the partial file was deleted"))
            }
        }
        try await Blocking.run { try PartialFile.finalize(partial: partialURL, to: finalURL) }
        if let pause = config.pauseAfterRename { try? await Task.sleep(for: pause) }
        guard let done = try await markCompleted(length: length, validators: record) else { throw ExternalStop() }
        return .finished(done)
    }

    /// Marks the record completed; `validators` (the record as the run knows it) brings the
    /// reply's ETag and Last-Modified when they were not persisted before.
    func markCompleted(length: Int64, validators: DownloadRecord? = nil) async throws -> DownloadRecord? {
        try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner) { r in
            if let v = validators {
                r.etag = v.etag
                r.lastModified = v.lastModified
                r.resumable = v.resumable
            }
            r.state = .completed
            r.leaseOwner = nil
            r.leaseExpiresAt = nil
            r.bytesReceived = length
            r.totalBytes = length
            r.lastErrorCode = nil
            r.lastErrorMessage = nil
            r.heldEtag = nil
            r.heldLastModified = nil
            r.heldBytes = nil
        }
    }

    // MARK: Ending badly

    /// Records a failure; the partial stays (integrity failures discard it in `finish`).
    private func fail(with error: CourierError) async -> RunOutcome {
        let partialURL = (try? await db.record(id: id)).flatMap { $0 }.map { context.fileURL($0.partialPath) }
        var keptBytes: Int64? = nil
        if let partialURL { keptBytes = (try? await db.keptBytes(id: id, partial: partialURL)) ?? PartialFile.length(at: partialURL) }
        let kept = keptBytes
        _ = try? await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { r in
            r.state = .failed
            r.leaseOwner = nil
            r.leaseExpiresAt = nil
            r.lastErrorCode = error.code.rawValue
            r.lastErrorMessage = error.message
            if let kept { r.bytesReceived = kept }
        }
        context.logger.warning("download failed: \(error)", metadata: ["id": "\(id)"])
        return .failed(error)
    }

    private func pause(with error: CourierError) async -> RunOutcome {
        let partialURL = (try? await db.record(id: id)).flatMap { $0 }.map { context.fileURL($0.partialPath) }
        var keptBytes: Int64? = nil
        if let partialURL { keptBytes = (try? await db.keptBytes(id: id, partial: partialURL)) ?? PartialFile.length(at: partialURL) }
        let kept = keptBytes
        _ = try? await db.update(id: id, ifStateIn: [.downloading, .queued], lease: context.owner) { r in
            r.state = .paused
            r.leaseOwner = nil
            r.leaseExpiresAt = nil
            r.lastErrorCode = error.code.rawValue
            r.lastErrorMessage = error.message
            if let kept { r.bytesReceived = kept }
        }
        context.logger.warning("download paused: \(error)", metadata: ["id": "\(id)"])
        return .paused(error)
    }

    // MARK: Helpers

    /// The URL to ask: the full one this process was given, else the stored one — unless
    /// the stored one had its secrets redacted: then the refresher's, else `E_URL_NEEDED`.
    /// `token=REDACTED` is never sent.
    private func usableURL(_ record: DownloadRecord) async throws -> String {
        if let liveURL { return liveURL }
        guard Redactor.isRedacted(url: record.remoteUrl) else { return record.remoteUrl }
        if let refresher = context.refresher, let fresh = try await refresher.refreshedURL(for: record, reason: .beforeResume) {
            return fresh
        }
        throw CourierError(.urlNeeded, "the URL of \(id) carried a secret, which is never stored: give the full URL again (or a URLRefreshing hook)")
    }

    func persist(_ change: @Sendable @escaping (inout DownloadRecord) -> Void) async throws -> DownloadRecord {
        guard let r = try await db.update(id: id, ifStateIn: [.downloading], lease: context.owner, change) else { throw ExternalStop() }
        return r
    }

    func discardPartial(_ url: URL) throws {
        if unlink(url.path) != 0, errno != ENOENT { throw PartialFile.error(errno, "delete", url) }
    }

    static func isRetriable(_ error: CourierError) -> Bool {
        [.network, .connectionRefused, .timeout, .shortBody, .httpServerError, .malformedHeader].contains(error.code)
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// A hasher fed with the first `length` bytes of a file: a resumed download's digest
    /// covers the kept prefix too, so the check holds across restarts.
    static func hasher(prefixOf url: URL, length: Int64) throws -> SHA256 {
        var hasher = SHA256()
        guard length > 0 else { return hasher }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CourierError(.fileRead, "cannot read \(url.lastPathComponent) to hash its kept bytes")
        }
        defer { try? handle.close() }
        var remaining = length
        while remaining > 0 {
            let data = try handle.read(upToCount: Int(min(remaining, 4 << 20))) ?? Data()
            guard !data.isEmpty else { throw CourierError(.fileRead, "\(url.lastPathComponent) is shorter than its kept length") }
            hasher.update(data: data)
            remaining -= Int64(data.count)
        }
        return hasher
    }

    /// The SHA-256 of a file's first `length` bytes, lowercase hex.
    static func sha256(of url: URL, length: Int64) throws -> String {
        hex(try hasher(prefixOf: url, length: length).finalize())
    }
}
