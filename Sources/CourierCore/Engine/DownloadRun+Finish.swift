import Crypto
import Foundation

/// The end of a whole file: size and checksum checked, the partial put in place, the record completed.
extension DownloadRun {
    // MARK: Finishing

    /// `unsynced`: the partial, still open and not yet synced (a one-connection body). The
    /// partial is synced before it is renamed into place, whichever way it came (see
    /// ``markCompleted(length:validators:moving:syncing:)``).
    func finish(record: DownloadRecord, length: Int64, hasher: SHA256?, unsynced: PartialFile? = nil) async throws -> AttemptOutcome {
        // The body is whole: from here the disk takes what it takes (a checksum, fsync,
        // rename), so the idle watchdog stops; had it fired first, nothing is put in place
        // (the watchdog's own timeout, whichever of the two the attempt hears first).
        try Self.stopIdleWatch()
        let partialURL = context.fileURL(record.partialPath)
        let finalURL = context.fileURL(record.localFinalPath)
        if let total = record.totalBytes, total != length {
            return try await failDiscarding(CourierError(.sizeMismatch, "the file has \(length) bytes, the server announced \(total)"), record: record)
        }
        if let expected = record.expectedBytes, expected != length {
            return try await failDiscarding(CourierError(.sizeMismatch, "the file has \(length) bytes, \(expected) were expected"), record: record)
        }
        if let expected = record.expectedSHA256 {
            let actual: String
            if let hasher {
                actual = SHA256Hex.hex(hasher.finalize())
            } else {
                actual = try Self.sha256(of: partialURL, length: length)
            }
            guard actual == expected else {
                return try await failDiscarding(CourierError(.checksumMismatch, "SHA-256 mismatch: expected \(expected), got \(actual); the partial file was deleted"), record: record)
            }
        }
        do {
            guard let done = try await markCompleted(length: length, validators: record, moving: (partialURL, finalURL), syncing: unsynced) else { throw ExternalStop() }
            return .finished(done)
        } catch let error as CourierError where error.code == .completionHook {
            // The whole partial stays, with what ties it to the server's file, so resuming
            // asks only whether it is whole (a 416) and finishes it.
            let etag = record.etag, lastModified = record.lastModified, resumable = record.resumable
            await context.bestEffort("keeping the validators of a whole partial", id: id) {
                try await persist { $0.etag = etag ?? $0.etag; $0.lastModified = lastModified ?? $0.lastModified; $0.resumable = resumable; $0.totalBytes = length; $0.bytesReceived = length }
            }
            return .fail(error)
        }
    }

    /// Fails for good with `error`, deleting the partial (its bytes are not the file
    /// asked for) and forgetting them in the record; `contentType`: the refused reply's,
    /// kept so a caller can say what arrived (a web page where a film was expected).
    func failDiscarding(_ error: CourierError, record: DownloadRecord, contentType: String? = nil) async throws -> AttemptOutcome {
        // The reason stands, and the bytes are forgotten, even when the deletion fails.
        await context.bestEffort("deleting the refused bytes", id: id) { try await discardPartial(context.fileURL(record.partialPath)) }
        await context.bestEffort("forgetting the discarded bytes", id: id) {
            try await persist { $0.resetToZero(countingAttempt: false); $0.contentType = contentType ?? $0.contentType }
        }
        return .fail(error)
    }

    /// Ends the attempt's idle watch before it finishes (the disk takes what it takes from
    /// here); the watchdog's timeout when it fired first, and then nothing is put in place.
    static func stopIdleWatch() throws {
        if let activity = Activity.current, !activity.stopWatching() {
            throw CourierError(.timeout, "the idle window ran out as the body ended; aborting this attempt")
        }
    }

    /// Marks the record completed, after `moving` the partial to its final path when given;
    /// `validators` (the record as the run knows it) brings the reply's ETag and
    /// Last-Modified when they were not persisted before. With the app's completion hook for
    /// this id, the hook runs inside that write and the rename is its last step, so the
    /// record, the app's row and the file in place change together; a hook that throws fails
    /// it with ``CourierError/Code/completionHook`` and nothing of it happens. While it runs
    /// (and once it completed the record) the run's end is its result, not the lease
    /// heartbeat's (``withLeaseHeartbeat(_:)``).
    func markCompleted(length: Int64, validators: DownloadRecord? = nil, moving: (partial: URL, final: URL)? = nil,
                       syncing unsynced: PartialFile? = nil) async throws -> DownloadRecord? {
        if let beforeCompleting = config.beforeCompleting { await beforeCompleting() }   // a test's window
        // The heartbeat found the lease lost first: its end (and reason) stands, nothing is put
        // in place. (Its reason, not a cancellation: this task may not be cancelled yet, and
        // an attempt takes a cancellation of an uncancelled task for a dropped transfer.)
        let refused = ending.withLock { $0.claim(.completing) ? nil : ($0.lost ?? CancellationError()) }
        if let refused { throw refused }
        var done: DownloadRecord?
        defer { if done == nil { ending.withLock { $0.release() } } }   // nothing completed, or it failed
        done = try await complete(length: length, validators: validators, moving: moving, syncing: unsynced)
        return done
    }

    private func complete(length: Int64, validators: DownloadRecord?, moving: (partial: URL, final: URL)?,
                          syncing unsynced: PartialFile?) async throws -> DownloadRecord? {
        let complete: @Sendable (inout DownloadRecord) -> Void = { $0.complete(length: length, validators: validators) }
        let hook = context.completionHooks.hook(for: id)
        // An unnamed partial (a small body) goes straight to its final name where nothing is
        // there and no hook waits (DownloadRun+UnnamedPartial); else it is named now, once
        // the download is known to be still this run's (`namedNow`), and renamed inside the
        // completing write, as for a hook: a cancel elsewhere, which could not delete it
        // while it had no name, then either comes first (nothing is replaced; the stopped
        // run deletes the name) or finds the download completed.
        var placed: (device: UInt64, inode: UInt64)?
        var namedNow = false
        if let unsynced, unsynced.isUnnamed {
            if hook == nil, let moving { placed = try await linkUnnamed(unsynced, at: moving.final) }
            if placed == nil {
                try await nameUnnamed(unsynced)
                namedNow = true
                if let afterNaming = config.afterNaming { await afterNaming() }   // a test's window; the completing write judges what happened meanwhile
            }
        }
        guard hook != nil || namedNow else {
            // `placed`: what this run puts in place where nothing was (`nil`: nothing moved,
            // or it replaced a file the user had: that one is never taken back).
            if let moving, placed == nil {
                let partial = moving.partial, final = moving.final
                let syncPartial = try Self.syncStep(for: partial, unsynced)
                // The partial's fsync, the rename and the folder's fsync: one trip to the
                // blocking pool, in that order (two trips cost a hand-off each way per file).
                placed = try await Blocking.run {
                    try syncPartial()
                    let replacing = PartialFile.identity(at: final) != nil
                    try PartialFile.finalize(partial: partial, to: final)
                    return replacing ? nil : PartialFile.identity(at: final)
                }
            }
            if moving != nil, let pause = config.pauseAfterRename { try? await config.clock.sleep(for: pause, .testPause) }   // a test pause; cancellation is seen by the next step
            // Past the point of no return once the file is in place: the completing write (and
            // the take-back below) runs even when this run was stopped meanwhile, in a task of
            // its own that the stop does not cancel; the run then ends completed, and a cancel
            // goes on as for any completed download. Never a file in place behind a record that
            // says otherwise.
            let run = self, placedFile = placed, final = moving?.final
            let done = try await EngineExecutor.current.throwingTask {
                let done = try await run.db.update(id: run.id, ifStateIn: [.downloading], lease: run.context.owner, complete)
                if done == nil, let placedFile, let final { await run.takeBackUnlessDescribed(final, placedFile, by: validators) }
                return done
            }.value
            if done != nil, let pause = config.pauseAfterCompleting { try? await config.clock.sleep(for: pause, .testPause) }   // a test pause; a stop now meets a completed record
            return done
        }
        // With the app's hook, the bytes are synced before its transaction begins.
        if let moving { try await Blocking.run(try Self.syncStep(for: moving.partial, unsynced)) }
        // Once begun (inside its transaction), the completing write runs to its commit in a
        // task of its own: a stop that cancelled it would have GRDB refuse the commit after the
        // rename, leaving the new file in place behind a record (and an app's row) that say it
        // is not done. A stop that comes before, even while the write waits for the database,
        // keeps the file out (`stopped`, read as the transaction begins); after, the run ends
        // completed and a cancel goes on as for any completed download.
        try Task.checkCancellation()
        let stopped = Locked(false)
        let isStopped: @Sendable () -> Bool = { stopped.withLock { $0 } }
        let phase = config.onCompletingWrite
        let lastStep: (@Sendable () throws -> Void)?
        if let moving {
            let partial = moving.partial, final = moving.final
            lastStep = {
                try PartialFile.finalize(partial: partial, to: final)
                phase?(.renamed, isStopped)   // a test's window, holding the write open
            }
        } else {
            lastStep = nil
        }
        let db = self.db, id = self.id, owner = context.owner, appHook: CompletionHook = hook ?? { _, _ in }
        return try await withTaskCancellationHandler {
            phase?(.waiting, isStopped)
            return try await EngineExecutor.current.throwingTask { try await db.complete(id: id, lease: owner, complete, hook: appHook, unless: isStopped, lastStep: lastStep) }.value
        } onCancel: {
            stopped.withLock { $0 = true }
        }
    }


    /// After the file was put in place where none was, the completing write found the
    /// download no longer this run's, and the file this run put there is deleted (if the path
    /// still names it) unless the record describes it:
    /// - gone: another process cancelled the download in between (its cancel deleted a
    ///   partial that was no longer there, then the record), and a cancelled download leaves
    ///   no file;
    /// - paused or taken over, with the validators of the reply this file came from (the
    ///   run's `validators`): the file stays, and the next run finds it whole and completes
    ///   it without a request;
    /// - paused or taken over with other validators, or none yet (a small body's are written
    ///   only with its completion): the next run would complete it under another version's
    ///   ETag (found by the simulator, seed 3984742150), so it goes, and the next run asks
    ///   again (for a small body, at most 1 MiB fetched twice);
    /// - a small body without a checksum, or a file being revalidated without one, whatever
    ///   its validators: the next run asks for it again anyway
    ///   (``completeFileInPlace(_:partialURL:finalURL:)``), and had that run failed for good,
    ///   the file would have stayed beside a failed record (seed 20002072);
    /// - completed (elsewhere, with this very file: its checksum, a `304`): the file stays.
    /// Run outside the run's task: a stop must not skip it.
    func takeBackUnlessDescribed(_ final: URL, _ placed: (device: UInt64, inode: UInt64), by validators: DownloadRecord?) async {
        guard case let .some(record) = await recordPastStop() else { return }   // unreadable: the file stays, as before
        let describes = record.map { r in
            r.state == .completed   // completed elsewhere with this very file (its checksum, a 304): it stays
                || (Self.vouchesForFileInPlace(r)
                    && (validators.map { r.etag == $0.etag && r.lastModified == $0.lastModified && r.totalBytes == $0.totalBytes } ?? true))
        } ?? false
        guard !describes, PartialFile.delete(final, ifStill: placed) else { return }
        context.logger.info(record == nil ? "cancelled by another process as the file was put in place: deleted it"
                                          : "stopped by another process as the file was put in place, which its record does not describe: deleted it", metadata: ["id": "\(id)"])
    }

    /// The partial's fsync before it is renamed into place, as a blocking step: through the
    /// descriptor this attempt wrote with (`unsynced`, handed over here), else by its path
    /// (whole from an earlier attempt or process, a 416 or a hand-off's: its writer may have
    /// died before syncing).
    static func syncStep(for partial: URL, _ unsynced: PartialFile?) throws -> @Sendable () throws -> Void {
        guard let fd = try unsynced?.handOver() else { return { try PartialFile.sync(at: partial) } }
        return { try PartialFile.syncAndClose(fd, partial) }
    }

    /// A hasher fed with the first `length` bytes of a file: a resumed download's digest
    /// covers the kept prefix too, so the check holds across restarts.
    static func hasher(prefixOf url: URL, length: Int64) throws -> SHA256 {
        var hasher = SHA256()
        guard length > 0 else { return hasher }
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileErrors.error(errno, "read (to hash its kept bytes)", url, .read) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        defer { try? handle.close() }   // a read-only handle: nothing to lose on close
        var remaining = length
        while remaining > 0 {
            let data = try handle.read(upToCount: Int(min(remaining, 4 << 20))) ?? Data()
            guard !data.isEmpty else { throw CourierError(.readFailed, "\(url.lastPathComponent) is shorter than its kept length: it changed under the download") }
            hasher.update(data: data)
            remaining -= Int64(data.count)
        }
        return hasher
    }

    /// The SHA-256 of a file's first `length` bytes, lowercase hex.
    static func sha256(of url: URL, length: Int64) throws -> String {
        SHA256Hex.hex(try hasher(prefixOf: url, length: length).finalize())
    }
}
