import Courier
import Foundation

/// Planning a version's download: what to fetch, where it goes, and what it must be.
extension MediaLibrary {
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
        // Asked again: the job keeps its age, task id and file; unless it ended (a kill took
        // only its removal), when this is a download again like any other.
        let earlier = jobs.load(taskId).flatMap { finishedBy($0) ? nil : $0 }
        // Downloaded again over a copy in the library: to a name of its own, which replaces
        // the copy only once whole and valid (a web page answered now never costs the film).
        let inLibrary = completedReport(key) != nil
        let plannedPath = try earlier?.plannedPath ?? MediaLayout.mediaFile(item, versionId: version, container: container) + (inLibrary ? MediaLayout.incomingSuffix : "")
        // The server's word: a size no file has (negative, past 2^60) announces nothing.
        let announced = options.transcoding == nil ? source?.size.flatMap { (0...(Int64(1) << 60)).contains($0) ? $0 : nil } : nil

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
