import Courier
import Foundation

/// A media file that arrived but is no media (validation failed): nothing of it stays.
struct MediaRejected: Error { let error: CourierError }

/// The version was cancelled by another process while this one finished it.
struct CancelledElsewhere: Error {}

/// Finishing a version once its media file is whole: validation, the name its MIME type
/// calls for, subtitles, metadata, images. Every step can run again after a kill: the next
/// run finds what the last one did and fetches no media bytes.
extension MediaLibrary {
    /// Waits for the job's media, finishes it, and says how it ended. The engine's own ends
    /// (paused, failed, cancelled) reach subscribers from the engine's events.
    func run(_ job: MediaJob) async {
        // In the library already (asked again with subtitles it lacks): only those extras.
        let inPlace = await keptCopy(job)
        var record: DownloadRecord?
        if inPlace == nil {
            do { record = try await awaitMedia(job) } catch { return }   // an engine end, already told by its own events
        }
        hub.publish(job.version, .finishing)
        do {
            let report: MediaDownloadReport
            if let record { report = try await finish(job, record: record) } else { report = try await finishExtras(job, media: inPlace!, refreshing: true) }
            try Task.checkCancellation()
            // Forgotten only now: killed before, the next run finds the record completed,
            // its file whole, and finishes again without fetching it. The end is told once
            // all is tidy.
            hub.settle(job.version)
            try? await downloader.cancel(id: job.taskId)   // a record left behind is forgotten by the next finish
            jobs.remove(job.taskId)
            hub.publish(job.version, .completed(report))
        } catch let rejected as MediaRejected {
            hub.settle(job.version)
            try? await downloader.cancel(id: job.taskId)   // the file is gone already; a record left behind downloads afresh next time
            jobs.remove(job.taskId)
            hub.publish(job.version, .failed(rejected.error))
        } catch is CancellationError {
            return   // cancelled: `cancel` tidies up and tells the end
        } catch is CancelledElsewhere {
            hub.settle(job.version)
            try? await downloader.cancel(id: job.taskId)   // that process forgot it already; a record left behind downloads afresh next time
            hub.publish(job.version, .cancelled)
        } catch {
            // Shut down meanwhile: the record and job stay for the next launch, and the
            // shutdown tells subscribers `paused`.
            if await stopped() { return }
            // Metadata could not be written (a full disk…): the record and job stay, and
            // the next start, resume or launch finishes it.
            hub.publish(job.version, .failed(error as? CourierError ?? CourierError(.writeFailed, "finishing \(job.version) failed", underlying: error)))
        }
    }

    /// The completed record of the job's media. The engine holds the download to the
    /// media source's announced size (a reply announcing another size fails before a byte
    /// is written; one of unannounced length when it ends): that failure leaves nothing here
    /// either (record, job, empty folders).
    func awaitMedia(_ job: MediaJob) async throws -> DownloadRecord {
        for await event in downloader.events(for: job.taskId) {
            guard let end = event.end else { continue }
            if case var .failed(error) = end, error.code == .sizeMismatch {
                // A page where a film was announced (the engine keeps the refused reply's type).
                if let type = try? await downloader.record(id: job.taskId)?.contentType, MediaFileTypes.isPage(contentType: type) {   // unreadable: the size error stands
                    error = CourierError(.notMedia, "the server answered \(type), not media (\(error.message))")
                }
                hub.settle(job.version)
                try? await downloader.cancel(id: job.taskId)   // its partial went with the failure; a record left behind downloads afresh next time
                jobs.remove(job.taskId)
                MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
                hub.publish(job.version, .failed(error))
                throw error
            }
            return try end.completedRecord(id: job.taskId)
        }
        throw CourierError(.cancelled, "the library shut down before \(job.version) arrived")
    }

    /// The media file's place in the library: `<itemId>-<versionId>.<ext>`, the extension
    /// from the reply's MIME type, else the container.
    nonisolated func finalPath(_ job: MediaJob, _ record: DownloadRecord) throws -> String {
        let ext = try MediaLayout.component(MediaFileTypes.mediaExtension(contentType: record.contentType, container: job.container), "extension")
        return try MediaLayout.mediaFile(job.item, versionId: job.version.versionId, container: ext)
    }

    func finish(_ job: MediaJob, record: DownloadRecord) async throws -> MediaDownloadReport {
        let finalPath = try finalPath(job, record)
        let planned = root.appendingPathComponent(job.plannedPath), final = root.appendingPathComponent(finalPath)
        let file: URL
        if FileManager.default.fileExists(atPath: planned.path) { file = planned }
        else if arrivedInPlace(job, final) { file = final }
        else { throw CourierError(.fileNotFound, "the media file of \(job.version) vanished before it was put in the library") }

        // Validated before anything records it: a web page or a truncated file answered
        // with 200 is removed, and the version fails with its own code. A file this job
        // already renamed into place was validated before (and a copy that was there before
        // the job is never judged by this reply's type).
        if file == planned || !job.isDownloadAgain, let problem = MediaValidation.problem(head: try MediaValidation.head(of: file), size: PartialFile.length(at: file), announced: job.announcedSize,
                                                 minimumSize: minimumMediaSize, contentType: record.contentType) {
            try removeFile(file)
            MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
            throw MediaRejected(error: problem)
        }
        try Task.checkCancellation()
        if file != final {
            guard rename(file.path, final.path) == 0 else { throw FileErrors.error(errno, "name the media file by its type:", final, .write) }
            try Durability.syncFolder(final.deletingLastPathComponent())
        }
        // An earlier copy of this version under another extension would be found first.
        let stem = final.deletingPathExtension().lastPathComponent
        for other in MediaDiscovery(root: root).files(in: final.deletingLastPathComponent(), depth: 0)
        where other != final && other.deletingPathExtension().lastPathComponent == stem && MediaDiscovery.mediaExtensions.contains(other.pathExtension.lowercased()) {
            try removeFile(other)
        }
        try await afterMediaInPlace?()
        return try await finishExtras(job, media: final)
    }

    /// What goes beside a media file in place: subtitles (optional), the metadata entry
    /// (essential), images (optional). `refreshing` a version already in the library keeps
    /// its entry's date, task id and the subtitles it has.
    func finishExtras(_ job: MediaJob, media final: URL, refreshing: Bool = false) async throws -> MediaDownloadReport {
        let finalPath = try relativePath(final)
        let earlier = refreshing ? MetadataStore(root: root).versions(forItem: job.item.id).last { $0.versionId == job.version.versionId } : nil
        // Subtitles (optional): beside the media, before the metadata that lists them.
        var subtitles: [SubtitleFile] = [], failedSubtitles: [Int] = []
        let folder = final.deletingLastPathComponent()
        for kept in earlier?.subtitles ?? [] where !job.subtitles.contains(where: { $0.index == kept.index })
            && FileManager.default.fileExists(atPath: folder.appendingPathComponent(kept.fileName).path) {
            subtitles.append(kept)
        }
        for stream in job.subtitles {
            do {
                subtitles.append(try await fetchSubtitle(stream, of: job).0)
            } catch {
                logger.warning("subtitle \(stream.index) of \(job.version) failed: \(error)")
                failedSubtitles.append(stream.index)
            }
        }

        // Metadata (essential), with the whole item as the server sent it; not once the
        // version was cancelled, nor when the library shut down meanwhile (subtitles and
        // images would be missing for good: the next launch finishes it again).
        try Task.checkCancellation()
        if await stopped() { throw CourierError(.cancelled, "the library shut down while finishing \(job.version); the next launch finishes it") }
        subtitles.sort { $0.index < $1.index }
        let entry = VersionInfo(versionId: job.version.versionId, container: final.pathExtension.lowercased(), isStatic: job.options.transcoding == nil, mediaSourceId: job.mediaSourceId,
                                downloadDate: earlier?.downloadDate ?? ISO8601DateFormatter().string(from: Date()), taskId: earlier?.taskId ?? job.uuid, itemId: job.item.id,
                                fileName: final.lastPathComponent, subtitles: subtitles.isEmpty ? nil : subtitles, transcoding: job.options.transcoding)
        // The series' and the season's own items only enrich an episode's metadata and
        // choose its season's backdrop; it downloads without them.
        var seriesItem: MediaItem?, seasonItem: MediaItem?
        if job.item.type == .episode {
            if let seriesId = job.item.seriesId { seriesItem = try? await server.item(id: seriesId) }   // only enriches: downloads without it
            if let seasonId = job.item.seasonId { seasonItem = (try? await server.item(id: seasonId)).flatMap { $0.id == seasonId ? $0 : nil } }   // only enriches: downloads without it
        }
        try await changingMetadata {
            // Cancelled by another process meanwhile (its cancel holds this lock too): no entry
            // for a file it removed.
            guard jobs.load(job.taskId) != nil, FileManager.default.fileExists(atPath: final.path) else { throw CancelledElsewhere() }
            try MetadataStore(root: root).record(entry, for: job.item, series: seriesItem, season: seasonItem)
        }

        // Images (optional).
        var failed: [String] = []
        for image in Self.imageJobs(job.item, season: seasonItem) {
            do {
                try await fetchImage(image)
            } catch {
                logger.warning("image \(image.path) failed: \(error)")
                failed.append(image.path)
            }
        }
        // Images that failed because the library shut down are fetched by the next launch,
        // not reported missing for good.
        if !failed.isEmpty, await stopped() { throw CourierError(.cancelled, "the library shut down while fetching \(job.version)'s images; the next launch finishes it") }
        return MediaDownloadReport(mediaPath: finalPath, versionId: job.version.versionId, failedImages: failed, subtitlePaths: try subtitles.map { try relativePath(folder.appendingPathComponent($0.fileName)) }, failedSubtitles: failedSubtitles)
    }

    /// A path under the library root, relative to it.
    nonisolated func relativePath(_ url: URL) throws -> String {
        let base = root.path.hasSuffix("/") ? root.path : root.path + "/"
        guard url.path.hasPrefix(base) else { throw CourierError(.invalidArgument, "\(url.path) is not in the library") }
        return String(url.path.dropFirst(base.count))
    }

    /// Fetches one subtitle stream as a text file beside the media; a web page is refused.
    private func fetchSubtitle(_ stream: MediaItem.MediaStream, of job: MediaJob) async throws -> (SubtitleFile, String) {
        guard let format = MediaFileTypes.subtitleFormat(codec: stream.codec) else { throw CourierError(.invalidArgument, "subtitle stream \(stream.index) is not text") }
        let path = try MediaLayout.subtitleFile(job.item, versionId: job.version.versionId, index: stream.index, language: stream.language, format: format)
        let entry = SubtitleFile(index: stream.index, language: stream.language, format: format, fileName: URL(fileURLWithPath: path).lastPathComponent)
        let url = root.appendingPathComponent(path)
        if FileManager.default.fileExists(atPath: url.path), !MediaValidation.isPage(head: try MediaValidation.head(of: url)) { return (entry, path) }
        let source = try server.subtitleURL(item: job.item, mediaSourceId: job.mediaSourceId ?? job.item.id, index: stream.index, format: format)
        let id = SHA256Hex.shortID(Self.subtitlePrefix, of: path)
        do {
            try await downloader.fetch(DownloadRequest(id: id, url: source, destination: enginePrefix + path))
        } catch {
            try? await downloader.cancel(id: id)   // a subtitle is small and fetched again next time: no failed record stays behind
            throw error
        }
        if MediaValidation.isPage(head: try MediaValidation.head(of: url)) {
            try removeFile(url)
            throw CourierError(.notMedia, "the server answered a web page for subtitle \(stream.index)")
        }
        return (entry, path)
    }
}
