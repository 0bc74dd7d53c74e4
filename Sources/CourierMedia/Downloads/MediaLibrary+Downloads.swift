import Courier
import Foundation

/// The app-facing download API: start returns at once; an event stream per version
/// drives a progress bar; pause, resume, cancel, the list in flight, and resuming
/// everything at launch steer it. Each version is a download of its own.
extension MediaLibrary {
    /// Starts downloading a version of a movie or episode (the first media source when
    /// `versionId` is nil) and returns once it is queued: follow it with ``events(for:)``.
    /// Asking again for a version in flight changes nothing; asking for one that was
    /// interrupted resumes it from the bytes kept.
    @discardableResult
    public func start(itemId: String, versionId: String? = nil, options: MediaDownloadOptions = MediaDownloadOptions()) async throws -> MediaVersion {
        let job = try await plan(itemId: itemId, versionId: versionId, options: options)
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
            guard jobs.load(taskId) != nil else {
                if hub.isSettling(version) { return }   // its end comes from the hub in a moment
                continuation.yield(completedReport(version).map { .completed($0) } ?? .failed(CourierError(.notFound, "nothing of \(version) is downloading or downloaded")))
                continuation.finish()
                return
            }
            // Only subtitles to fetch for a copy in the library: the engine has no part in it
            // (its stream would replay the end of the copy's own download).
            if (try? await downloader.record(id: taskId)) == nil, mediaFile(for: version) != nil { return }   // unreadable store: follow the engine as usual
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
        guard jobs.load(taskId) != nil else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
        try await downloader.pause(id: taskId)
    }

    /// Resumes a paused, failed or interrupted version from the bytes it kept.
    public func resume(_ version: MediaVersion) async throws {
        guard let job = jobs.load(MediaJob.taskId(version)) else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
        if hub.isSettling(version) { return }   // it is ending (completed or refused) right now
        hub.reopen(version)
        try await bringBack(job)
    }

    /// Cancels a version's download: its partial file, record and job go. A copy already
    /// in the library (an earlier download of the same version) stays.
    public func cancel(_ version: MediaVersion) async throws {
        let taskId = MediaJob.taskId(version)
        guard let job = jobs.load(taskId) else { throw CourierError(.notFound, "nothing of \(version) is downloading") }
        hub.settle(version)
        let record = try await downloader.record(id: taskId)
        if let finisher = finishers[taskId]?.task {
            finisher.cancel()   // a finisher stops before its next step that would keep the version
            await finisher.value
        }
        // Started again while this waited: that run is not this cancel's (checked with no
        // wait before the engine's cancel, so it never takes the new run's record).
        if finishers[taskId] != nil { return }
        do { try await downloader.cancel(id: taskId) } catch let error as CourierError where error.code == .notFound {}   // no record: nothing to cancel in the engine
        if finishers[taskId] != nil { return }
        // Under the metadata lock: a finisher in another process checks the job there before
        // it writes an entry, so it never lists a file this removes.
        try await changingMetadata {
            jobs.remove(taskId)
            if completedReport(version) == nil {
                // Arrived but never put in the library (cancelled while finishing, or after a
                // kill there): it goes too, under either of its names.
                let named = record.flatMap { try? finalPath(job, $0) }   // no record or no valid name: the planned path is the only one
                for path in [job.plannedPath, named].compactMap({ $0 }) { try removeFile(root.appendingPathComponent(path)) }
                MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
            } else if job.plannedPath.hasSuffix(MediaLayout.incomingSuffix) {
                try removeFile(root.appendingPathComponent(job.plannedPath))   // a new copy that arrived but was not put in place; the old one stays
            }
        }
        hub.publish(version, .cancelled)
    }

    /// Every version not yet in the library, oldest first: queued, downloading, paused,
    /// failed, or finishing.
    public func inFlight() async throws -> [MediaTransfer] {
        var out: [MediaTransfer] = []
        for job in jobs.all() {
            let record = try await downloader.record(id: job.taskId)
            // No record: finishing when the media is in place (only extras left, or a kill
            // after the record was forgotten), else about to be queued (killed before it was).
            let inPlace = record == nil && mediaFile(for: job.version) != nil
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

    /// At launch: goes on with every version an earlier run left unfinished (interrupted
    /// downloads resume from their bytes; whole files are finished without fetching
    /// anything). Paused and failed ones only when asked. Versions another process runs are
    /// left to it. Returns the versions under way.
    @discardableResult
    public func resumeAll(includePaused: Bool = false, includeFailed: Bool = false) async throws -> [MediaVersion] {
        var resumed: [MediaVersion] = []
        for job in jobs.all() where finishers[job.taskId] == nil {
            if let record = try await downloader.record(id: job.taskId) {
                if record.state == .paused, !includePaused { continue }
                if record.state == .failed, !includeFailed { continue }
            }
            hub.reopen(job.version)
            do {
                if try await bringBack(job) { resumed.append(job.version) }
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
        } else if let report = completedReport(job.version) {
            // In the library: done, or only subtitles to fetch (the finisher sees it in place).
            if hasEverythingAskedFor(job) {
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

    /// Whether the version's entry lists every subtitle the job asks for.
    nonisolated func hasEverythingAskedFor(_ job: MediaJob) -> Bool {
        let have = Set(downloadedVersions(itemId: job.version.itemId).last { $0.versionId == job.version.versionId }?.subtitles?.map(\.index) ?? [])
        return job.subtitles.allSatisfy { have.contains($0.index) }
    }

    /// Whether a completed record's file is still there, under its planned name or the one
    /// its MIME type gave it.
    nonisolated func mediaFileArrived(_ job: MediaJob, _ record: DownloadRecord) -> Bool {
        let named = (try? finalPath(job, record)) ?? job.plannedPath   // an invalid extension is refused when finishing
        return [job.plannedPath, named].contains { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) }
    }

    /// Starts the task that waits for the media and finishes the version, unless one runs;
    /// `following` one (a resume): after it, if the version is still in flight then (a
    /// finisher that saw the pause may not have ended yet; one that saw the media arrive
    /// finishes it itself).
    func launch(_ job: MediaJob, following: Bool = false) {
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
        if finishers[taskId] == nil, let job = jobs.load(taskId) { launch(job) }
    }

    /// The engine request of a job: the static file, or the server's transcoding.
    func request(for job: MediaJob) throws -> DownloadRequest {
        let url = try job.options.transcoding.map { try server.transcodeURL(item: job.item, mediaSourceId: job.mediaSourceId, options: $0) }
            ?? server.downloadURL(item: job.item, mediaSourceId: job.mediaSourceId, container: job.container, isStatic: true)
        return DownloadRequest(id: job.taskId, url: url, destination: job.plannedPath, mediaId: "\(job.item.id)-\(job.version.versionId)", mediaType: job.item.type.rawValue,
                               expectedSize: job.announcedSize.flatMap { $0 > 0 ? $0 : nil })
    }

    /// What downloading a version means: the item, its source, version id, file, subtitles,
    /// and enough free space (seed 003: 100 MiB beyond what is still to come).
    func plan(itemId: String, versionId: String?, options: MediaDownloadOptions) async throws -> MediaJob {
        let item = try await server.item(id: try MediaLayout.component(itemId))
        try ensureFolder()
        guard item.id == itemId else { throw CourierError(.protocolViolation, "the server answered item \(item.id) for \(itemId)") }
        guard item.type == .movie || item.type == .episode else { throw CourierError(.invalidArgument, "only movies and episodes download (\(itemId) is a \(item.type.rawValue))") }
        let source = versionId.flatMap { v in item.mediaSources?.first { $0.id == v } } ?? (versionId == nil ? item.mediaSources?.first : nil)
        if let versionId, source == nil, versionId != item.id {
            throw CourierError(.notFound, "item \(itemId) has no version \(versionId)")
        }
        let sourceVersion = try MediaLayout.component(source?.id ?? item.id, "version id")
        let version = try MediaLayout.component(options.transcoding.map { "\(sourceVersion)-\($0.versionSuffix)" } ?? sourceVersion, "version id")
        let container = try MediaLayout.component((options.transcoding?.container ?? source?.container ?? "mp4").lowercased(), "container")
        let key = MediaVersion(itemId: item.id, versionId: version)
        let taskId = MediaJob.taskId(key)
        let earlier = jobs.load(taskId)   // asked again: the job keeps its age, task id and file
        // Downloaded again over a copy in the library: to a name of its own, which replaces
        // the copy only once whole and valid (a web page answered now never costs the film).
        let inLibrary = completedReport(key) != nil
        let plannedPath = try earlier?.plannedPath ?? MediaLayout.mediaFile(item, versionId: version, container: container) + (inLibrary ? MediaLayout.incomingSuffix : "")
        let announced = options.transcoding == nil ? source?.size : nil

        let held = PartialFile.length(at: root.appendingPathComponent(plannedPath + ".partial"))
        let needed = minimumFreeSpace + max(0, (announced ?? 0) - held)
        if let available = DiskSpace.available(at: root), available < needed {
            throw CourierError(.noSpace, "\(needed) bytes of free space are needed, \(available) are available")
        }
        return MediaJob(taskId: taskId, version: key, mediaSourceId: source?.id, item: item, container: container, plannedPath: plannedPath,
                        options: options, announcedSize: announced, subtitles: try Self.subtitles(options.subtitles, of: source, version: key),
                        createdAt: earlier?.createdAt ?? Date(), uuid: earlier?.uuid ?? UUID().uuidString)
    }

    /// The subtitle streams a choice names, checked against the source: an index it does
    /// not have is `E_NOT_FOUND`; an image subtitle (PGS, VobSub) asked for
    /// by index is `E_INVALID_ARGUMENT` (`.all` skips those).
    static func subtitles(_ choice: SubtitleChoice, of source: MediaItem.MediaSource?, version: MediaVersion) throws -> [MediaItem.MediaStream] {
        let streams = source?.subtitleStreams ?? []
        switch choice {
        case .none: return []
        case .all: return streams.filter { MediaFileTypes.subtitleFormat(codec: $0.codec) != nil }
        case let .indexes(list):
            return try list.map { index in
                guard let stream = streams.first(where: { $0.index == index }) else { throw CourierError(.notFound, "\(version) has no subtitle stream \(index)") }
                guard MediaFileTypes.subtitleFormat(codec: stream.codec) != nil else {
                    throw CourierError(.invalidArgument, "subtitle stream \(index) of \(version) is \(stream.codec ?? "of no known codec"): an image format, not a text file")
                }
                return stream
            }
        }
    }
}
