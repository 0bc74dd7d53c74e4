import Courier
import Foundation

/// The app-facing download API: start returns at once; an event stream per version
/// drives a progress bar; pause, resume, cancel, the list in flight, and resuming
/// everything at launch steer it. Each version is a download of its own.
extension MediaLibrary {
    /// Starts downloading a version of a movie or episode (the first media source when
    /// `versionId` is nil) and returns once it is queued: follow it with ``events(for:)``.
    /// Asking again for a version in flight here changes nothing; asking for one that was
    /// interrupted resumes it from the bytes kept.
    @discardableResult
    public func start(itemId: String, versionId: String? = nil, options: MediaDownloadOptions = MediaDownloadOptions()) async throws -> MediaVersion {
        try checkOpen()
        let job = try await plan(itemId: itemId, versionId: versionId, options: options)
        return try await exclusively(job.taskId) { try await start(job) }
    }

    /// ``start(itemId:versionId:options:)`` of a planned job, alone among its version's calls.
    private func start(_ job: MediaJob) async throws -> MediaVersion {
        let options = job.options
        if finishers[job.taskId] != nil { return job.version }
        if options.keepsMediaInLibrary, jobs.load(job.taskId) == nil, try await downloader.record(id: job.taskId) == nil, let report = completedReport(job.version) {
            // In the library already and kept: only the subtitles asked for that it lacks.
            hub.reopen(job.version)
            if hasEverythingAskedFor(job) { hub.publish(job.version, .completed(report)) } else {
                try jobs.save(job)   // killed meanwhile: the next launch fetches them
                launch(job)
            }
            return job.version
        }
        hub.reopen(job.version)
        try jobs.save(job)
        let record = try await downloader.record(id: job.taskId)
        if record?.state != .completed || (record.map { mediaFileArrived(job, $0) } == false) {
            do {
                try await downloader.enqueue(try request(for: job))
            } catch {
                if record == nil { jobs.remove(job.taskId) }   // nothing started: no job may outlive it
                throw error
            }
        }
        launch(job)
        return job.version
    }

    /// Downloads a version and returns when it is in the library: ``start(itemId:versionId:options:)``
    /// followed by ``completion(of:)``. Media and metadata are essential; images and
    /// subtitles optional (listed in the report when they fail).
    @discardableResult
    public func download(itemId: String, versionId: String? = nil, options: MediaDownloadOptions = MediaDownloadOptions()) async throws -> MediaDownloadReport {
        try await completion(of: try await start(itemId: itemId, versionId: versionId, options: options))
    }

    /// Waits for a version's download to end: its report, or its end as an error
    /// (`E_PAUSED`, `E_CANCELLED`, or the failure).
    public nonisolated func completion(of version: MediaVersion) async throws -> MediaDownloadReport {
        for await event in events(for: version) {
            if let report = try event.result(for: version) { return report }
        }
        throw CourierError(.cancelled, "the library shut down before \(version) finished")
    }

    /// The events of one version's download, ending with one final event. Subscribe after
    /// ``start(itemId:versionId:options:)`` (or ``resume(_:)``): a version with nothing in
    /// flight answers at once, ``MediaDownloadEvent/completed(_:)`` when it is in the
    /// library, else ``MediaDownloadEvent/failed(_:)`` with `E_NOT_FOUND`.
    public nonisolated func events(for version: MediaVersion) -> AsyncStream<MediaDownloadEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MediaDownloadEvent.self)
        let key = UUID()
        if let end = hub.subscribe(version, key: key, continuation) {
            continuation.yield(end)
            continuation.finish()
            return stream
        }
        let taskId = MediaJob.taskId(version)
        let forward = Task {
            if await stopped() {   // nothing will move again in this process
                continuation.yield(.paused(MediaEventHub.shutDown(version)))
                continuation.finish()
                return
            }
            guard let job = jobs.load(taskId) else {
                if hub.isSettling(version) { return }   // its end comes from the hub in a moment
                continuation.yield(completedReport(version).map { .completed($0) } ?? .failed(CourierError(.notFound, "nothing of \(version) is downloading or downloaded")))
                continuation.finish()
                return
            }
            // Only subtitles to fetch for a copy in the library: the engine has no part in it
            // (its stream would replay the end of the copy's own download).
            if await keptCopy(job) != nil { return }
            var handedOn = false   // the engine's completion: the library's finishing sends the end
            for await event in downloader.events(for: taskId) {
                switch event {
                case let .progress(p): continuation.yield(.progress(p))
                case let .stateChanged(_, state, _): if state == .queued { continuation.yield(.queued) }
                case let .retrying(_, attempt, limit, error, delay): continuation.yield(.retrying(attempt: attempt, limit: limit, error: error, delay: delay))
                case let .ended(_, end):
                    switch end {
                    case .completed: handedOn = true; await ensureRunning(taskId)
                    case let .failed(error) where error.code == .sizeMismatch:
                        handedOn = true; await ensureRunning(taskId)   // the library tidies up, then tells the end
                    case let .failed(error): continuation.yield(.failed(error)); continuation.finish()
                    case let .paused(error): continuation.yield(.paused(error)); continuation.finish()
                    case .cancelled:
                        if hub.isSettling(version) { return }   // the library forgot the record; its own end follows
                        continuation.yield(.cancelled); continuation.finish()
                    case let .leftToAnotherProcess(error): continuation.yield(.failed(error)); continuation.finish()
                    case .shutDown: continuation.yield(.paused(MediaEventHub.shutDown(version))); continuation.finish()
                    }
                }
            }
            // The engine's stream ended with no end of its own (it shut down): say so, so no
            // one waits for ever.
            if !handedOn, !Task.isCancelled { continuation.yield(.paused(MediaEventHub.shutDown(version))); continuation.finish() }
        }
        continuation.onTermination = { [hub] _ in
            forward.cancel()
            hub.unsubscribe(version, key: key)
        }
        return stream
    }

    /// Pauses a version's download, keeping its bytes (also one another process runs).
    public func pause(_ version: MediaVersion) async throws {
        let taskId = MediaJob.taskId(version)
        try await exclusively(taskId) {
            guard jobs.load(taskId) != nil else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
            try await downloader.pause(id: taskId)
        }
    }

    /// Resumes a paused, failed or interrupted version from the bytes it kept.
    public func resume(_ version: MediaVersion) async throws {
        try checkOpen()
        try await exclusively(MediaJob.taskId(version)) {
            guard let job = jobs.load(MediaJob.taskId(version)) else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
            if hub.isSettling(version) { return }   // it is ending (completed or refused) right now
            hub.reopen(version)
            try await bringBack(job)
        }
    }

    /// Cancels a version's download: its partial file, record and job go. A copy already
    /// in the library (an earlier download of the same version) stays, and so does this one
    /// when it was put in the library before the cancel took effect (its end is then
    /// ``MediaDownloadEvent/completed(_:)``).
    public func cancel(_ version: MediaVersion) async throws {
        try await exclusively(MediaJob.taskId(version)) { try await cancelAlone(version) }
    }

    /// ``cancel(_:)``, alone among the version's calls.
    private func cancelAlone(_ version: MediaVersion) async throws {
        let taskId = MediaJob.taskId(version)
        guard let job = jobs.load(taskId) else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
        hub.settle(version)
        let finisher = finishers[taskId]?.task
        do {
            let record = try await downloader.record(id: taskId)
            finisher?.cancel()   // it stops before its next step that would keep the version
            // The job goes first (under the metadata lock, where a finisher in another process
            // looks for it before it writes an entry): a kill after this leaves at most a
            // record and bytes that nothing resumes by itself, never a cancelled film that the
            // next launch downloads again.
            try await changingMetadata { jobs.remove(taskId) }
            do { try await downloader.cancel(id: taskId) } catch let error as CourierError where error.code == .notFound {}   // no record: nothing to cancel in the engine
            await finisher?.value   // the engine stopped: one waiting for the media returns at once
            if finishedBy(job), let report = completedReport(version) {
                // It was put in the library before the cancel took effect: it stays.
                hub.publish(version, .completed(report))
                return
            }
            try await changingMetadata {
                if completedReport(version) == nil {
                    // Arrived but never put in the library (cancelled while finishing, or after a
                    // kill there): it goes too, under either of its names.
                    let named = record.flatMap { try? finalPath(job, $0) }   // no record or no valid name: the planned path is the only one
                    for path in [job.plannedPath, named].compactMap({ $0 }) { try removeFile(root.appendingPathComponent(path)) }
                    MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
                } else if job.isDownloadAgain {
                    try removeFile(root.appendingPathComponent(job.plannedPath))   // a new copy that arrived but was not put in place; the old one stays
                }
            }
            hub.publish(version, .cancelled)
        } catch {
            // The cancel could not finish: what is left goes on as it was (its finisher again,
            // so its subscribers still get an end), and the caller hears why.
            if jobs.load(taskId) != nil {
                hub.reopen(version)
                launch(job, following: true)
            } else {
                hub.publish(version, .failed(error as? CourierError ?? CourierError(.writeFailed, "cancelling \(version) failed", underlying: error)))
            }
            throw error
        }
    }

    /// Every version not yet in the library, oldest first: queued, downloading, paused,
    /// failed, or finishing.
    public func inFlight() async throws -> [MediaTransfer] {
        var out: [MediaTransfer] = []
        for job in jobs.all() {
            let record = try await downloader.record(id: job.taskId)
            // No record: finishing when the media is in place (only extras left, or a kill
            // after the record was forgotten), else about to be queued (killed before it was).
            let inPlace = record == nil && (job.options.keepsMediaInLibrary && mediaFile(for: job.version) != nil || finishedBy(job))
            let state: String
            switch record?.state {
            case nil: state = inPlace ? "finishing" : "queued"
            case .completed?: state = "finishing"
            case .handedOff?: state = "downloading"
            case let s?: state = s.rawValue
            }
            out.append(MediaTransfer(version: job.version, name: job.item.name, state: state, bytesReceived: record?.bytesReceived ?? (inPlace ? job.announcedSize ?? 0 : 0),
                                     totalBytes: record?.totalBytes ?? job.announcedSize, isTranscoded: job.options.transcoding != nil,
                                     errorCode: record?.lastErrorCode, errorMessage: record?.lastErrorMessage))
        }
        return out
    }

    /// At launch: sweeps what interrupted downloads left (``clean(abandonedAfter:)``, its
    /// report in ``lastCleanup``), then goes on with every version an earlier run left
    /// unfinished (interrupted downloads resume from their bytes; whole files are finished
    /// without fetching anything). Paused and failed ones only when asked. Versions another
    /// process runs are left to it. Returns the versions under way.
    @discardableResult
    public func resumeAll(includePaused: Bool = false, includeFailed: Bool = false) async throws -> [MediaVersion] {
        try checkOpen()
        do { try await clean() } catch { logger.warning("cleanup at launch failed: \(error)") }   // what it left stays for the next sweep; resuming matters more
        var resumed: [MediaVersion] = []
        for job in jobs.all() where finishers[job.taskId] == nil {
            if let record = try await downloader.record(id: job.taskId) {
                if record.state == .paused, !includePaused { continue }
                if record.state == .failed, !includeFailed { continue }
            }
            do {
                let goes = try await exclusively(job.taskId) { () async throws -> Bool in
                    guard finishers[job.taskId] == nil, jobs.load(job.taskId) != nil else { return false }   // started or cancelled meanwhile
                    hub.reopen(job.version)
                    return try await bringBack(job)
                }
                if goes { resumed.append(job.version) }
            } catch let error as CourierError where error.code == .leased {
                logger.info("\(job.version) runs in another process; left to it")
            }
        }
        return resumed
    }

    // MARK: Internals

    /// Gets a job going again; false when there was nothing left to do (it was in the
    /// library already: a kill landed after the record was forgotten).
    @discardableResult
    func bringBack(_ job: MediaJob) async throws -> Bool {
        if let record = try await downloader.record(id: job.taskId) {
            if record.state != .completed { try await downloader.resume(id: job.taskId) }
            else if !mediaFileArrived(job, record) { try await downloader.enqueue(try request(for: job)) }
        } else if let report = completedReport(job.version), finishedBy(job) || job.options.keepsMediaInLibrary {
            // This job's end with only its removal lost, or a copy kept: done, or only
            // subtitles to fetch (the finisher sees the copy in place). A download again that
            // never reached the engine is not taken for done by the copy it would replace.
            if !job.options.keepsMediaInLibrary || hasEverythingAskedFor(job) {
                hub.publish(job.version, .completed(report))
                jobs.remove(job.taskId)
                return false
            }
        } else {
            try await downloader.enqueue(try request(for: job))
        }
        launch(job, following: true)
        return true
    }

    /// The copy in the library when the job only fetches what it lacks (kept media, no
    /// engine record); `nil` when the media comes through the engine.
    nonisolated func keptCopy(_ job: MediaJob) async -> URL? {
        guard job.options.keepsMediaInLibrary, (try? await downloader.record(id: job.taskId)) == nil else { return nil }   // unreadable store: the engine's way, as usual
        return mediaFile(for: job.version)
    }

    /// Whether the version's entry lists every subtitle the job asks for.
    nonisolated func hasEverythingAskedFor(_ job: MediaJob) -> Bool {
        let have = Set(downloadedVersions(itemId: job.version.itemId).last { $0.versionId == job.version.versionId }?.subtitles?.map(\.index) ?? [])
        return job.subtitles.allSatisfy { have.contains($0.index) }
    }

    /// Whether a completed record's file is still there, under its planned name or the one
    /// its MIME type gave it.
    nonisolated func mediaFileArrived(_ job: MediaJob, _ record: DownloadRecord) -> Bool {
        let named = (try? finalPath(job, record)) ?? job.plannedPath   // an invalid extension is refused when finishing
        return FileManager.default.fileExists(atPath: root.appendingPathComponent(job.plannedPath).path) || arrivedInPlace(job, root.appendingPathComponent(named))
    }

    /// Whether `final` is the file this job's download put there: for a download again
    /// (`.incoming`), only a file written after the job began, never the copy it replaces.
    nonisolated func arrivedInPlace(_ job: MediaJob, _ final: URL) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: final.path) else { return false }   // no file: not arrived
        guard job.isDownloadAgain else { return true }
        return ((attributes[.modificationDate] as? Date) ?? .distantPast) >= job.createdAt
    }

    /// Whether the version's entry in the library was written by this job (its task id):
    /// the job ended and only its removal was lost to a kill.
    nonisolated func finishedBy(_ job: MediaJob) -> Bool {
        downloadedVersions(itemId: job.version.itemId).contains { $0.versionId == job.version.versionId && $0.taskId == job.uuid } && mediaFile(for: job.version) != nil
    }

    /// Starts the task that waits for the media and finishes the version, unless one runs;
    /// `following` one (a resume): after it, if the version is still in flight then (a
    /// finisher that saw the pause may not have ended yet; one that saw the media arrive
    /// finishes it itself).
    func launch(_ job: MediaJob, following: Bool = false) {
        if isShutDown { return }   // the next start's resumeAll follows it
        let previous = finishers[job.taskId]
        if previous != nil, !following { return }
        let id = UUID()
        let task = Task {
            if let previous { await previous.task.value }
            if previous == nil || self.jobs.load(job.taskId) != nil { await self.run(job) }
            if self.finishers[job.taskId]?.id == id { self.finishers[job.taskId] = nil }
        }
        finishers[job.taskId] = Finisher(id: id, task: task)
    }

    /// Makes sure a version whose media completed is being finished (a subscriber saw the
    /// completion of a job no task of this process follows).
    func ensureRunning(_ taskId: String) {
        // Not while a start, pause, resume or cancel of it is under way (each sees to its
        // finisher), nor once its end is being decided.
        guard !isShutDown, finishers[taskId] == nil, !steering.isBusy(taskId), let job = jobs.load(taskId), !hub.isSettling(job.version) else { return }
        launch(job)
    }

    /// The engine request of a job: the static file, or the server's transcoding.
    func request(for job: MediaJob) throws -> DownloadRequest {
        let url = try job.options.transcoding.map { try server.transcodeURL(item: job.item, mediaSourceId: job.mediaSourceId, options: $0) }
            ?? server.downloadURL(item: job.item, mediaSourceId: job.mediaSourceId, container: job.container, isStatic: true)
        return DownloadRequest(id: job.taskId, url: url, destination: enginePrefix + job.plannedPath, mediaId: "\(job.item.id)-\(job.version.versionId)", mediaType: job.item.type.rawValue,
                               expectedSize: job.announcedSize.flatMap { $0 > 0 ? $0 : nil })
    }
}
