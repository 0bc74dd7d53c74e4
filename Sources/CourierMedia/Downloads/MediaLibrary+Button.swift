import Courier
import Foundation

/// What pressing DOWNLOAD on a library version did (seed 002 over seed 003).
public enum MediaButtonAction: Sendable, Equatable {
    /// Rule 1: the version is in the library and its file opens: play this file.
    case open(URL)
    /// Rules 2, 5, 6: the version's download started (after rule 7's clean-up), or resumed
    /// from its kept bytes when the library was asked to (``MediaLibrary/pressDownload(itemId:versionId:options:resumingStopped:opens:)``).
    case downloadStarted(MediaVersion)
    /// Rule 4: the version is in flight (queued, downloading, handed to the system, or being
    /// finished); nothing else is done.
    case inProgress(MediaVersion)
    /// Rule 3: the version is in the library but its file does not open.
    case error(CourierError)
}

/// The DOWNLOAD button over the media library: a library version in the seed's terms,
/// judged by the same rule book as ``DownloadButton`` (``DownloadButtonRules``). A finished
/// version has no engine record (the library forgets it): it is complete when the library
/// lists it and holds its file.
extension MediaLibrary {
    /// What the UI calls when DOWNLOAD is pressed on a version: open it, say it is in
    /// flight, or download it, cleaning up what an earlier task left first (rule 7: its
    /// partial, record and job, and the version's file and entry). `versionId`: the media
    /// source (`nil`: the item's version in the library or in flight, else the server's
    /// first). `resumingStopped`: a paused or failed version resumes from its verified
    /// bytes instead of starting over (off by default, as the seed says).
    public func pressDownload(itemId: String, versionId: String? = nil, options: MediaDownloadOptions = MediaDownloadOptions(),
                              resumingStopped: Bool = false,
                              opens: @Sendable (URL) throws -> Void = DownloadButton.defaultOpen) async throws -> MediaButtonAction {
        try checkOpen()
        let (version, source) = try await buttonVersion(itemId: itemId, versionId: versionId, options: options)
        switch DownloadButtonRules.decide(try await buttonHolding(version), opens: opens) {
        case let .open(file): return .open(file)
        case let .error(error): return .error(error)
        case .inProgress: return .inProgress(version)
        case let .download(rule):
            if rule == 6, resumingStopped, try await downloader.record(id: MediaJob.taskId(version)) != nil {
                try await resume(version)
                return .downloadStarted(version)
            }
            // Planned before anything is cleared: a press that cannot download (no server,
            // no such version) destroys nothing.
            _ = try await plan(itemId: itemId, versionId: source, options: options)
            try await clearData(version)
            return .downloadStarted(try await start(itemId: itemId, versionId: source, options: options))
        }
    }

    /// "Clear data" for a version: its download in flight is cancelled (partial, record,
    /// job) and its copy in the library goes (media, subtitles, metadata entry). Nothing to
    /// clear is no error.
    public func clearData(_ version: MediaVersion) async throws {
        try checkOpen()
        do { try await cancel(version) } catch let error as CourierError where error.code == .notFound {
            // No job: an engine record may still be there (a kill between a cancel's two steps).
            do { try await downloader.cancel(id: MediaJob.taskId(version)) } catch let error as CourierError where error.code == .notFound {}   // none: nothing in flight
        }
        try await changingMetadata {
            let store = MetadataStore(root: root)
            guard let folder = store.folder(holding: version.itemId) else { return }
            let stem = "\(try MediaLayout.component(version.itemId))-\(try MediaLayout.component(version.versionId, "version id"))."
            for file in MediaDiscovery(root: root).files(in: folder, depth: 2) where file.lastPathComponent.hasPrefix(stem) {
                try removeFile(file)
            }
            try store.removeVersion(version.versionId, under: folder)
            MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
        }
    }

    /// What a version holds, in the seed's terms: in flight by its job and record, else
    /// complete by the library's entry (with its file there or not), else nothing.
    func buttonHolding(_ version: MediaVersion) async throws -> DownloadButtonRules.Holding {
        let taskId = MediaJob.taskId(version)
        if let job = jobs.load(taskId), !finishedBy(job) {
            switch try await downloader.record(id: taskId)?.state {
            case .paused?, .failed?: return .stopped
            case nil:
                // Between its job and its record (being started, here or in another process),
                // or a job nothing runs (a kill before its record): start over.
                let starting = finishers[taskId] != nil || Date().timeIntervalSince(job.createdAt) < Self.startingWindow
                return starting ? .inProgress : .stopped
            case .queued?, .downloading?, .handedOff?, .completed?: return .inProgress   // completed: being finished
            }
        }
        guard MetadataStore(root: root).versions(forItem: version.itemId).contains(where: { $0.versionId == version.versionId }) else { return .nothing }
        if let file = mediaFile(for: version) { return .complete(file: file, present: true) }
        return .complete(file: root.appendingPathComponent(MediaLayout.downloads), present: false)
    }

    /// How long a job with no record yet counts as being started (its record follows).
    static let startingWindow: TimeInterval = 60

    /// The version a press means, and its media source (`nil`: the item's own): the one
    /// named (with the transcoding's suffix), else the item's only version of the same kind
    /// (static, or transcoded alike) in the library or in flight, else the server's first.
    func buttonVersion(itemId: String, versionId: String?, options: MediaDownloadOptions) async throws -> (MediaVersion, source: String?) {
        let item = try MediaLayout.component(itemId)
        let suffix = options.transcoding.map { "-\($0.versionSuffix)" } ?? ""
        if let versionId { return (MediaVersion(itemId: item, versionId: try MediaLayout.component(versionId, "version id") + suffix), versionId) }
        let transcoded = options.transcoding != nil
        var known: [String: String?] = [:]   // version id → media source id
        for entry in MetadataStore(root: root).versions(forItem: item) where entry.itemId ?? item == item && entry.isStatic != transcoded && entry.versionId.hasSuffix(suffix) {
            known[entry.versionId] = entry.mediaSourceId
        }
        for job in jobs.all() where job.version.itemId == item && (job.options.transcoding != nil) == transcoded && job.version.versionId.hasSuffix(suffix) {
            known[job.version.versionId] = job.mediaSourceId
        }
        if known.count == 1, let (only, source) = known.first { return (MediaVersion(itemId: item, versionId: only), source) }
        let source = try await server.item(id: item).mediaSources?.first?.id
        return (MediaVersion(itemId: item, versionId: try MediaLayout.component(source ?? item, "version id") + suffix), source)
    }
}
