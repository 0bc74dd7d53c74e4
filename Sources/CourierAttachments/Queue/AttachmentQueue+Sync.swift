import Courier
import Foundation
import GRDB

/// The sync passes: uploads and downloads of what the watched items and the local saves ask
/// for, each settled with a retry schedule.
extension AttachmentQueue {
    /// Asks for a sync pass; during a pass, schedules exactly one more.
    public func requestSync() {
        guard !stopped, !clearing else { return }
        if syncTask != nil {
            passRequested = true
            return
        }
        syncTask = Task { await self.runPasses() }
    }

    /// Runs a full pass now (after the running one), and returns when it is done.
    public func sync() async {
        let wasStopped = stopped
        stopped = false
        requestSync()
        if syncTask != nil { passRequested = true }
        await syncTask?.value
        stopped = wasStopped
    }

    func runPasses() async {
        repeat {
            passRequested = false
            await pass()
        } while passRequested && !stopped
        syncTask = nil
        scheduleWake()
    }

    /// One pass: every queued upload, download (unless the device does not download) and
    /// delete that is not backing off, at most ``AttachmentQueueOptions/maxConcurrentTransfers``
    /// at once; then what the last watched set no longer references is archived, and the
    /// archive cache is trimmed.
    func pass() async {
        let table = self.table
        let states: [AttachmentState] = options.downloadAttachments ? [.queuedUpload, .queuedDownload, .queuedDelete] : [.queuedUpload, .queuedDelete]
        let pending: [Attachment]
        do {
            pending = try await writer.read { db in try table.fetchAll(db, states: states) }
        } catch {
            logger.error("cannot read the attachment queue: \(error)")
            return
        }
        let now = ContinuousClock.now
        let away = await handedOffUploads()
        let due = pending.filter { (notBefore[$0.id] ?? now) <= now && !($0.state == .queuedUpload && away.contains(Self.downloadID($0.id))) }
        let limit = max(1, options.maxConcurrentTransfers)
        await withTaskGroup(of: (Attachment, (any Error)?).self) { group in
            var iterator = due.makeIterator()
            var running = 0
            while running < limit, !clearing, handingOff == 0, let next = iterator.next() {
                group.addTask { await (next, self.transfer(next)) }
                running += 1
            }
            while let (attachment, error) = await group.next() {
                await settle(attachment, error)
                if !clearing, handingOff == 0, let next = iterator.next() {
                    group.addTask { await (next, self.transfer(next)) }
                }
            }
        }
        guard !clearing else { return }
        do { try await archiveUnwatched() } catch {
            // Archived by the next pass or the next emission of the watched query instead.
            logger.warning("archiving attachments no longer watched failed: \(error)")
        }
        do { try await expireCache() } catch {
            // The cache is trimmed again after the next pass; nothing is lost meanwhile.
            logger.warning("expiring the archive cache failed: \(error)")
        }
    }

    /// Records a transfer's outcome: success clears the backoff; failure asks the error
    /// handler (retry or archive), and backs off before the next try.
    func settle(_ attachment: Attachment, _ error: (any Error)?) async {
        guard !clearing else { return }   // clearQueue() cancelled it and deletes the record
        if handingOff > 0, error != nil { return }   // stopped to be handed off: not a failure
        guard let error else {
            failures[attachment.id] = nil
            notBefore[attachment.id] = nil
            lastErrors[attachment.id] = nil
            return
        }
        lastErrors[attachment.id] = error as? CourierError ?? CourierError(.unexpected, Redactor.redact(String(describing: error)), underlying: error)
        logger.warning("attachment \(attachment.id) \(attachment.state) failed: \(Redactor.redact(String(describing: error)))")
        var retry = true
        if let errorHandler {
            switch attachment.state {
            case .queuedDownload: retry = await errorHandler.onDownloadError(attachment: attachment, error: error)
            case .queuedUpload: retry = await errorHandler.onUploadError(attachment: attachment, error: error)
            case .queuedDelete: retry = await errorHandler.onDeleteError(attachment: attachment, error: error)
            default: break
            }
        } else if attachment.state == .queuedUpload, (error as? CourierError)?.code == .fileNotFound {
            retry = false   // no file, nothing will ever upload
        }
        if !retry {
            failures[attachment.id] = nil
            notBefore[attachment.id] = nil
            lastErrors[attachment.id] = nil
            let table = self.table
            var archived = attachment
            archived.state = .archived
            archived.timestamp = Attachment.now()
            let record = archived
            do { _ = try await writer.write { db in try table.update(db, record, ifStateIs: attachment.state) } } catch {
                // Not archived: the attachment stays in its queued state and the next pass
                // meets the same outcome again.
                logger.warning("archiving attachment \(attachment.id) failed: \(error)")
            }
            return
        }
        let count = (failures[attachment.id] ?? 0) + 1
        failures[attachment.id] = count
        notBefore[attachment.id] = ContinuousClock.now + options.retryPolicy.delay(afterFailures: count, retryAfter: nil)
    }

    /// Wakes for the earliest backoff to end, so a retry does not wait for the timer.
    func scheduleWake() {
        wakeTask?.cancel()
        guard !stopped, let earliest = notBefore.values.min() else { return }
        wakeTask = Task { [weak self] in
            try? await Task.sleep(until: earliest, clock: .continuous)   // a cancelled sleep ends early; the loop checks cancellation next
            if Task.isCancelled { return }
            await self?.requestSync()
        }
    }
}
