import Courier
import CourierAttachments
import Foundation

/// Writes and their uploads. A write is on disk (atomic) and owed to the remote (in the
/// database) before it returns; the upload runs in the background, retried with the
/// engine's backoff, sent only over the remote version the local copy came from, and
/// resumed after a relaunch by ``resumeUploads()``.
extension MirrorContainer {
    /// Writes atomically (temp file, fsync, rename under an exclusive lock), records the
    /// upload it owes, and starts it. A missing folder is `E_FNF_WRITE`.
    public func coordinatedWrite(_ path: String, data: Data) async throws {
        let target = try url(path)
        let dir = target.deletingLastPathComponent()
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDir), isDir.boolValue else {
            throw CourierError(.fileWrite, "the folder of \(path) does not exist")
        }
        // A document seen for the first time is based on its placeholder's version, or, when
        // nothing was here, on "no remote object" (a create never overwrites another's file).
        let placeholder = Placeholder.read(for: target)
        let firstBase: String? = placeholder.map { $0.etag } ?? (FileManager.default.fileExists(atPath: target.path) ? nil : "")
        let write = try AtomicWrite(replacing: target)
        do {
            try write.handle.write(contentsOf: data)
            try write.prepare()
            try await withLock(path, target, .exclusive) {
                // Owed before the bytes are in place: a kill after the rename never leaves
                // a change on disk that nothing will upload (at worst an upload of the old bytes).
                _ = try await sync.noteWritten(path, firstBase: firstBase)
                try write.putInPlace()
                unlink(Placeholder.url(for: target).path)
            }
        } catch let e as CourierError where e.code == .database {
            write.abandon()
            throw e
        } catch {
            write.abandon()
            throw FileErrors.error(error, "write", target, .write)
        }
        queueUpload(path)
    }

    /// At launch: starts every upload still owed (a write the last run did not finish
    /// sending, or one that gave up on a passing error). Returns their paths.
    @discardableResult
    public func resumeUploads() async throws -> [String] {
        let owed = try await sync.reopen()
        for path in owed { queueUpload(path) }
        return owed
    }

    /// Sends a failed upload again (a conflict is resolved by writing the document again).
    public func retryUpload(_ path: String) async throws {
        guard try await sync.noteRetryAsked(path) else {
            throw CourierError(.invalidState, "\(path) has no failed upload to retry")
        }
        queueUpload(path)
    }

    /// Every document with an upload owed, failed or in conflict, by path.
    public func uploads() async throws -> [DocumentUpload] {
        try await sync.all().compactMap { row in row.status.map { DocumentUpload(path: row.path, status: $0, baseVersion: row.base) } }
    }

    /// Waits until every upload started has ended (sent, given up, or in conflict).
    public func flushUploads() async {
        while let next = uploads.withLock({ $0.values.first?.task }) { await next.value }
    }

    /// Starts sending what `path` owes, after any upload of it already running.
    func queueUpload(_ path: String) {
        let token = UUID()
        // One critical section: two writes at once chain one after the other, never both
        // behind the same earlier upload.
        uploads.withLock { running in
            let previous = running[path]?.task
            running[path] = (token, Task { [self] in
                await previous?.value
                do { try await sendOwed(path) } catch {
                    // Still owed in the database: the next resumeUploads() sends it.
                    logger.error("upload of \(path) stopped: \(error)")
                }
                uploads.withLock { if $0[path]?.token == token { $0[path] = nil } }
            })
        }
    }

    /// Sends the owed generation of `path` until the remote has it, the precondition fails
    /// (conflict: both versions kept), or the retries give up with a code.
    private func sendOwed(_ path: String) async throws {
        var retries = RetryBudget(policy: uploadRetry)
        let target = try url(path)
        let attachment = Attachment(id: path, filename: path, state: .queuedUpload)
        while !Task.isCancelled {
            // The row and the snapshot are read under one shared lock, so the generation
            // recorded as sent is the one whose bytes were sent.
            let snapshot = try folder.snapshot(for: path)
            let owed: DocumentSyncStore.Row? = try await withLock(path, target, .shared) {
                guard let row = try await sync.row(path), row.state == .pending else { return nil }
                try FileCopyForUpload.copy(target, snapshot)
                return row
            }
            guard let row = owed else { return }
            defer { unlink(snapshot.path) }
            do {
                var version: String?
                if let conditional = storage as? any ConditionalRemoteStorage {
                    version = try await conditional.upload(fileAt: snapshot, attachment: attachment, precondition: row.precondition)
                    // A reply without an ETag: the remote tells the version, or the next
                    // upload cannot be conditional.
                    if version == nil { version = try await conditional.version(of: attachment) }
                } else {
                    try await storage.upload(fileAt: snapshot, attachment: attachment)
                }
                try await sync.noteUploaded(path, generation: row.generation, version: version)
            } catch let e as CourierError where e.code == .conflict {
                do { try await keepBoth(path, generation: row.generation, sent: snapshot) } catch {
                    let failure = CourierError(.conflict, "\(path) changed on the remote, and its version could not be fetched to keep both: \(error)")
                    try await sync.noteFailed(path, generation: row.generation, attempts: row.attempts + 1, error: failure)
                }
                return
            } catch let e as CourierError where e.code == .database {
                throw e
            } catch let e where e is CancellationError || Task.isCancelled {
                return   // shut down: still owed, resumed at the next launch
            } catch {
                let e = error as? CourierError ?? CourierError(.unexpected, "upload of \(path) failed", underlying: error)
                guard e.isPassing, case let .wait(delay, attempt, limit) = retries.failed(e, retryAfter: nil, kept: 0) else {
                    logger.error("upload of \(path) failed for good: \(e)")
                    let failure = CourierError(e.code, "upload failed: \(e.message)", httpStatus: e.httpStatus)
                    try await sync.noteFailed(path, generation: row.generation, attempts: row.attempts + 1, error: failure)
                    return
                }
                try await sync.noteRetry(path, generation: row.generation, attempts: row.attempts + 1, error: e)
                logger.warning("upload of \(path) failed (\(attempt) of \(limit)); retrying in \(delay): \(e)")
                try? await Task.sleep(for: delay)   // a cancelled sleep ends early; the loop checks cancellation next
            }
        }
    }

    /// The remote changed since the local copy was taken: its version is downloaded (into
    /// `.courier/conflicts/`, then put beside the document; the local one stays as it is)
    /// and the conflict recorded. A remote
    /// deleted meanwhile leaves no copy; the next write then creates it again. A remote that
    /// holds exactly the bytes sent is this upload's own, its record taken back (a power cut
    /// after the remote had it, before the commit saying so): recorded sent, no conflict.
    private func keepBoth(_ path: String, generation: Int64, sent: URL) async throws {
        let remote = Attachment(id: path, filename: path, state: .queuedDownload)
        let version = try await (storage as? any ConditionalRemoteStorage)?.version(of: remote)
        var copy = ""
        if version != nil {
            let theirs = try folder.remoteCopy(for: path)
            defer { unlink(theirs.path) }
            try await storage.download(remote, to: theirs)
            if try Self.sameBytes(theirs, sent) {
                try await sync.noteUploaded(path, generation: generation, version: version)
                logger.info("\(path): the remote already holds the bytes owed (an upload whose record was lost)")
                return
            }
            copy = ConflictCopy.path(for: path, at: Date())
            let target = try url(copy)
            do {
                try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                if rename(theirs.path, target.path) != 0 {
                    // Another volume under the root (a mount point, a symlinked folder): copied.
                    guard errno == EXDEV else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    try FileManager.default.copyItem(at: theirs, to: target)
                }
            } catch {
                throw FileErrors.error(error, "keep the remote version of \(path) as", target, .write)
            }
        }
        try await sync.noteConflict(path, generation: generation, copy: copy, remoteVersion: version ?? "")
        logger.warning("\(path) changed on the remote: kept both (the remote version as \(copy.isEmpty ? "nothing: it was deleted" : copy))")
    }

    /// Whether two files hold the same bytes (read in 1 MiB chunks).
    private static func sameBytes(_ a: URL, _ b: URL) throws -> Bool {
        let (x, y) = (try FileHandle(forReadingFrom: a), try FileHandle(forReadingFrom: b))
        defer { try? x.close(); try? y.close() }   // read-only handles: a failed close loses nothing
        while true {
            let (p, q) = (try x.read(upToCount: 1 << 20) ?? Data(), try y.read(upToCount: 1 << 20) ?? Data())
            if p != q { return false }
            if p.isEmpty { return true }
        }
    }
}

/// How a conflict copy is named: beside the document, `name (conflict 2026-11-25 14.03.07).ext`
/// (UTC), so it sorts next to it and never replaces a document.
enum ConflictCopy {
    static func path(for path: String, at date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH.mm.ss"
        let url = URL(fileURLWithPath: "/" + path)
        let ext = url.pathExtension
        let stem = ext.isEmpty ? url.lastPathComponent : String(url.lastPathComponent.dropLast(ext.count + 1))
        let name = "\(stem) (conflict \(f.string(from: date)))" + (ext.isEmpty ? "" : ".\(ext)")
        let dir = (path as NSString).deletingLastPathComponent
        return dir.isEmpty ? name : dir + "/" + name
    }
}

/// Plain streaming copy for upload snapshots.
enum FileCopyForUpload {
    static func copy(_ source: URL, _ target: URL) throws {
        guard let input = FileHandle(forReadingAtPath: source.path) else { throw CourierError(.fileNotFound, "\(source.lastPathComponent) vanished") }
        defer { try? input.close() }   // a read-only handle: nothing to lose on close
        // A snapshot is whole or absent: an upload never reads a half-copied one.
        let write = try AtomicWrite(replacing: target)
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try write.handle.write(contentsOf: chunk) }
            try write.commit()
        } catch {
            write.abandon()
            throw FileErrors.error(error, "snapshot", source, .write)
        }
    }
}
