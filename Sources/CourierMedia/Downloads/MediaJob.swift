import Courier
import Foundation

/// One version being downloaded, written before its download starts and removed only once
/// the version is whole in the library: what lets a relaunched app finish it (validate,
/// name by MIME type, subtitles, metadata, images) without asking the server again.
struct MediaJob: Codable, Sendable, Equatable {
    /// The engine's download id.
    var taskId: String
    var version: MediaVersion
    /// The media source id (`nil`: the item itself).
    var mediaSourceId: String?
    /// The item as the server sent it.
    var item: MediaItem
    /// The container asked for: the extension when the reply's MIME type names none.
    var container: String
    /// Where the engine writes the file (relative to the library root).
    var plannedPath: String
    var options: MediaDownloadOptions
    /// The media source's announced size (none for a transcoded download).
    var announcedSize: Int64?
    /// The subtitle streams to fetch, already checked against the source.
    var subtitles: [MediaItem.MediaStream]
    /// When the download was asked for.
    var createdAt: Date
    /// The seed's task UUID, kept in the version's metadata.
    var uuid: String

    /// Whether it downloads a version again over its copy in the library (to `.incoming`,
    /// put in the copy's place only once whole and valid).
    var isDownloadAgain: Bool { plannedPath.hasSuffix(MediaLayout.incomingSuffix) }

    /// The engine id of a version: readable when it can be (`media:<item>:<version>`),
    /// hashed when the ids are not safe identifiers.
    static func taskId(_ version: MediaVersion) -> String {
        let readable = "media:\(version.itemId):\(version.versionId)"
        let ambiguous = version.itemId.contains(":") || version.versionId.contains(":")   // `a:b`+`c` and `a`+`b:c` must not share an id
        return (ambiguous ? nil : try? SafePath.validateIdentifier(readable)) ?? SHA256Hex.shortID("media:", of: readable)   // an unsafe id gets a hashed one
    }
}

/// The jobs of a library: one JSON file each in `.courier-media-jobs/` under the library
/// root (hidden, so never taken for media), written atomically.
struct MediaJobStore {
    let folder: URL

    init(root: URL) { folder = root.appendingPathComponent(".courier-media-jobs") }

    private func file(_ taskId: String) -> URL { folder.appendingPathComponent(SHA256Hex.shortID("job-", of: taskId) + ".json") }

    func save(_ job: MediaJob) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            try Durability.createFolder(folder)
        } catch { throw FileErrors.error(error, "create", folder, .write) }
        try AtomicWrite.write(try encoder.encode(job), to: file(job.taskId))
    }

    func load(_ taskId: String) -> MediaJob? { Self.decode(file(taskId)) }

    /// The job in `file`; none when there is no file, or an unreadable one (the version
    /// then downloads afresh when asked).
    private static func decode(_ file: URL) -> MediaJob? {
        guard let data = try? Data(contentsOf: file) else { return nil }   // no file: no job
        return try? JSONDecoder().decode(MediaJob.self, from: data)   // unreadable: no job, as said above
    }

    /// Every job, oldest first (unreadable files are skipped).
    func all() -> [MediaJob] {
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []   // no folder: no jobs
        return files.filter { $0.pathExtension == "json" }
            .compactMap(Self.decode)
            .sorted { ($0.createdAt, $0.taskId) < ($1.createdAt, $1.taskId) }
    }

    func remove(_ taskId: String) {
        unlink(file(taskId).path)
    }
}
