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
        let version = try await buttonVersion(itemId: itemId, versionId: versionId, options: options)
        switch DownloadButtonRules.decide(try await buttonHolding(version), opens: opens) {
        case let .open(file): return .open(file)
        case let .error(error): return .error(error)
        case .inProgress: return .inProgress(version)
        case let .download(rule):
            if rule == 6, resumingStopped, try await downloader.record(id: MediaJob.taskId(version)) != nil {
                try await resume(version)
                return .downloadStarted(version)
            }
            try await clearData(version)
            let started = try await start(itemId: itemId, versionId: versionId ?? (version.versionId == itemId ? nil : version.versionId), options: options)
            return .downloadStarted(started)
        }
    }

    /// "Clear data" for a version: its download in flight is cancelled (partial, record,
    /// job) and its copy in the library goes (media, subtitles, metadata entry). Nothing to
    /// clear is no error.
    public func clearData(_ version: MediaVersion) async throws {
        try checkOpen()
        do { try await cancel(version) } catch let error as CourierError where error.code == .notFound {}   // nothing in flight
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
            case nil: return finishers[taskId] != nil ? .inProgress : .stopped   // a job nothing runs (a kill before its record): start over
            case .queued?, .downloading?, .handedOff?, .completed?: return .inProgress   // completed: being finished
            }
        }
        guard MetadataStore(root: root).versions(forItem: version.itemId).contains(where: { $0.versionId == version.versionId }) else { return .nothing }
        if let file = mediaFile(for: version) { return .complete(file: file, present: true) }
        return .complete(file: root.appendingPathComponent(MediaLayout.downloads), present: false)
    }

    /// The version a press means: the one named (with the transcoding's suffix), else the
    /// item's only version in the library or in flight, else the server's first source.
    func buttonVersion(itemId: String, versionId: String?, options: MediaDownloadOptions) async throws -> MediaVersion {
        let item = try MediaLayout.component(itemId)
        let suffix = options.transcoding.map { "-\($0.versionSuffix)" } ?? ""
        if let versionId { return MediaVersion(itemId: item, versionId: try MediaLayout.component(versionId, "version id") + suffix) }
        let known = Set(MetadataStore(root: root).versions(forItem: item).filter { $0.itemId ?? item == item }.map(\.versionId)
                        + jobs.all().filter { $0.version.itemId == item }.map(\.version.versionId))
        if known.count == 1, let only = known.first { return MediaVersion(itemId: item, versionId: only) }
        let source = try await server.item(id: item).mediaSources?.first?.id ?? item
        return MediaVersion(itemId: item, versionId: try MediaLayout.component(source, "version id") + suffix)
    }
}
