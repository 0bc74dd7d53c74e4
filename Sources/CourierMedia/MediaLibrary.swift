import Courier
import Crypto
import Foundation
import Logging

/// What a download of one item did.
public struct MediaDownloadReport: Sendable, Equatable {
    /// The media file, relative to the library root.
    public var mediaPath: String
    /// The version id.
    public var versionId: String
    /// Images that could not be fetched (they never fail the item).
    public var failedImages: [String]
}

/// The offline media library (seed 003): `Downloads/` laid out by item, versioned media
/// files through the resumable engine, `metadata.json` at movie, series and season level.
public actor MediaLibrary {
    /// The folder that holds `Downloads/`.
    public nonisolated let root: URL
    let server: any MediaServer
    /// The media server the library was given (the app releases it: ``MediaServer/shutdown()``).
    public nonisolated var mediaServer: any MediaServer { server }
    let downloader: Downloader
    let logger: Logger
    /// Free space required beyond the media's size (seed 003: 100 MiB).
    public var minimumFreeSpace: Int64 = 100 << 20
    /// A media file smaller than this is no film: it fails with `E_NOT_MEDIA` (16 KiB).
    public var minimumMediaSize: Int64 = 16 << 10

    /// Makes a library at `root` over `server`; `database` keeps the engine's records, so a
    /// two-hour film resumes after a relaunch.
    /// `protection` guards the `Downloads` folder (backup exclusion, data protection);
    /// it is applied again whenever the folder is recreated. `transport`: how the engine
    /// speaks HTTP (`URLSessionTransport` in an app; AsyncHTTPClient by default).
    public init(root: URL, server: any MediaServer, database: CourierDatabase, configure: (inout DownloaderConfiguration) -> Void = { _ in },
                protection: any FolderProtecting = SystemFolderProtection(), transport: (any HTTPTransport)? = nil,
                logger: Logger = Logger(label: "courier.media")) throws {
        self.root = root.standardizedFileURL
        self.server = server
        self.logger = logger
        folder = LibraryFolder(url: root.appendingPathComponent(MediaLayout.downloads), protection: protection)
        // Applied at every start, not only at creation: a library made before protection
        // existed, or restored from a backup, is excluded from backups again, and files
        // created from now on get the folder's protection class (existing files keep theirs).
        _ = try folder.ensure()
        protectionFailure = folder.applyProtection()
        var config = DownloaderConfiguration(rootDirectory: root)
        config.freeSpaceReserve = 0   // the library checks its own 100 MiB rule first
        configure(&config)
        downloader = Downloader(configuration: config, database: database, transport: transport, requestAuthorizer: Credentials(headers: { [server] _, _ in server.authorizationHeaders() }), logger: logger)
        if let protectionFailure { logger.warning("\(protectionFailure)") }
    }

    /// A test hook run between the media file's arrival and the metadata write (where a
    /// kill would orphan the file). Internal: for `@testable` tests only.
    var afterMediaInPlace: (@Sendable () async throws -> Void)?
    /// Sets ``afterMediaInPlace``.
    func setAfterMediaInPlace(_ hook: (@Sendable () async throws -> Void)?) { afterMediaInPlace = hook }

    /// The library folder, protected on (re)creation.
    let folder: LibraryFolder
    /// The last failure to protect the library folder, if any (the download went on).
    public private(set) var protectionFailure: CourierError?

    /// Deletes a file or folder; a failure is an error with its code (a file already gone is fine).
    private func removeFile(_ url: URL) throws {
        do { try FileManager.default.removeItem(at: url) } catch {
            if !FileManager.default.fileExists(atPath: url.path) { return }
            throw FileErrors.error(error, "remove", url, .write)
        }
    }

    /// Recreates a deleted `Downloads` folder and protects it again; a failure to protect
    /// is logged and kept in ``protectionFailure``.
    func ensureFolder() throws {
        if let failure = try folder.ensure() {
            protectionFailure = failure
            logger.warning("\(failure)")
        }
    }

    /// Sets the free space required beyond the media's size.
    public func setMinimumFreeSpace(_ bytes: Int64) { minimumFreeSpace = bytes }

    /// Stops downloads (resumable later).
    public func shutdown() async { await downloader.shutdown() }

    /// Downloads an item's version (the first media source when `versionId` is nil): media
    /// and metadata are essential, images optional.
    @discardableResult
    public func download(itemId: String, versionId: String? = nil) async throws -> MediaDownloadReport {
        let item = try await server.item(id: try MediaLayout.component(itemId))
        try ensureFolder()
        guard item.id == itemId else { throw CourierError(.protocolViolation, "the server answered item \(item.id) for \(itemId)") }
        guard item.type == .movie || item.type == .episode else { throw CourierError(.invalidArgument, "only movies and episodes download (\(itemId) is a \(item.type.rawValue))") }
        let source = versionId.flatMap { v in item.mediaSources?.first { $0.id == v } } ?? (versionId == nil ? item.mediaSources?.first : nil)
        if let versionId, source == nil, versionId != item.id {
            throw CourierError(.notFound, "item \(itemId) has no version \(versionId)")
        }
        let mediaSourceId = source?.id
        let version = try MediaLayout.component(mediaSourceId ?? item.id, "version id")
        let container = try MediaLayout.component(source?.container ?? "mp4", "container")
        let mediaPath = try MediaLayout.mediaFile(item, versionId: version, container: container)

        // Storage: 100 MiB plus the remaining size, when known.
        let readable = "media:\(item.id):\(version)"
        let taskId = (try? SafePath.validateIdentifier(readable)) ?? SHA256Hex.shortID("media:", of: readable)   // an id that is not a safe identifier gets a hashed one
        let held = PartialFile.length(at: root.appendingPathComponent(mediaPath + ".partial"))
        let needed = minimumFreeSpace + max(0, (source?.size ?? 0) - held)
        if let available = DiskSpace.available(at: root), available < needed {
            throw CourierError(.noSpace, "\(needed) bytes of free space are needed, \(available) are available")
        }

        // Media (essential), through the resumable engine; a new download replaces the file atomically.
        // Its media group is the video version (`<itemId>-<versionId>`, the file's stem), so
        // each version is a download of its own: DOWNLOAD's rule 7 cleans one version's
        // earlier tasks and never another's.
        // The record is forgotten only once the metadata is written: killed in between, the
        // next call finds it completed with its file whole, fetches nothing, and writes it.
        try await downloader.enqueue(DownloadRequest(id: taskId, url: try server.downloadURL(item: item, mediaSourceId: mediaSourceId, container: container, isStatic: true),
                                                     destination: mediaPath, mediaId: "\(item.id)-\(version)", mediaType: item.type.rawValue))
        let done = try await downloader.waitForCompletion(id: taskId)
        // Validated before anything records it: a web page or a truncated file answered
        // with 200 is removed with its record, and the item fails with its own code.
        let file = root.appendingPathComponent(mediaPath)
        if let problem = MediaValidation.problem(head: try MediaValidation.head(of: file), size: done.totalBytes ?? PartialFile.length(at: file),
                                                 announced: source?.size, minimumSize: minimumMediaSize) {
            try await downloader.cancel(id: taskId)
            try removeFile(file)
            MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
            throw problem
        }
        try await afterMediaInPlace?()

        // Metadata (essential).
        let entry = VersionInfo(versionId: version, container: container, isStatic: true, mediaSourceId: mediaSourceId,
                                downloadDate: ISO8601DateFormatter().string(from: Date()), taskId: UUID().uuidString, itemId: item.id)
        var seriesItem: MediaItem?
        if item.type == .episode, let seriesId = item.seriesId { seriesItem = try? await server.item(id: seriesId) }   // the series' details only enrich an episode's metadata; it downloads without them
        try MetadataStore(root: root).record(entry, for: item, series: seriesItem)
        try await downloader.cancel(id: taskId)   // on a completed download: the record goes, the file stays

        // Images (optional).
        var failed: [String] = []
        for (context, kinds, imageItemId) in imageJobs(item) {
            for (kind, source) in kinds {
                let path = try MediaLayout.image(context, kind, ext: "jpeg")
                do {
                    try await fetchImage(itemId: imageItemId, kind: source, to: path)
                } catch {
                    logger.warning("image \(path) failed: \(error)")
                    failed.append(path)
                }
            }
        }
        return MediaDownloadReport(mediaPath: mediaPath, versionId: version, failedImages: failed)
    }

    /// Each image to fetch: where it goes (context and kind) and which of the server's
    /// images it is. An episode's backdrop is the episode's primary image (the seed's rule:
    /// servers rarely have episode backdrops, so asking for one was usually a silent 404).
    private func imageJobs(_ item: MediaItem) -> [(MediaLayout.ImageContext, [(MediaLayout.ImageKind, MediaLayout.ImageKind)], String)] {
        let both: [(MediaLayout.ImageKind, MediaLayout.ImageKind)] = [(.primary, .primary), (.backdrop, .backdrop)]
        switch item.type {
        case .movie:
            return [(.movie(item), both, item.id)]
        case .episode:
            guard let seriesId = item.seriesId, let folder = try? MediaLayout.itemFolder(item), let season = try? MediaLayout.seasonFolder(item) else { return [] }   // an item with no valid folder has no images to fetch
            var jobs: [(MediaLayout.ImageContext, [(MediaLayout.ImageKind, MediaLayout.ImageKind)], String)] = [(.series(id: seriesId, folder: folder), both, seriesId)]
            if let seasonId = item.seasonId { jobs.append((.season(id: seasonId, folder: season), [(.primary, .primary)], seasonId)) }
            jobs.append((.episode(item), [(.primary, .primary), (.backdrop, .primary)], item.id))
            return jobs
        default:
            return []
        }
    }

    private func fetchImage(itemId: String, kind: MediaLayout.ImageKind, to path: String) async throws {
        if FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) { return }
        let id = SHA256Hex.shortID("image:", of: path)
        try await downloader.fetch(DownloadRequest(id: id, url: try server.imageURL(itemId: itemId, kind: kind), destination: path))
    }

    // MARK: Queries

    /// Seed 003's rule: both the metadata entry and the media file must be there.
    public nonisolated func isItemVersionDownloaded(itemId: String, mediaSourceId: String?) -> Bool {
        let target = mediaSourceId ?? itemId
        let store = MetadataStore(root: root)
        let hasEntry = store.versions(forItem: itemId).contains { $0.normalizedSource(itemId: $0.itemId ?? itemId) == target }
        return hasEntry && MediaDiscovery(root: root).mediaFile(itemId: itemId, mediaSourceId: mediaSourceId) != nil
    }

    /// Every item's metadata: movies and series (with their aggregated versions).
    public nonisolated func catalog() throws -> [DownloadMetadata] {
        let store = MetadataStore(root: root)
        let folders = (try? FileManager.default.contentsOfDirectory(at: root.appendingPathComponent(MediaLayout.downloads), includingPropertiesForKeys: nil)) ?? []   // a folder that cannot be listed holds nothing to show
        return folders.sorted { $0.lastPathComponent < $1.lastPathComponent }.compactMap { store.read($0.appendingPathComponent("metadata.json")) }
    }

    /// Bytes under an item's folder (a movie or a series), or the whole library.
    public nonisolated func size(itemId: String? = nil) throws -> Int64 {
        let folder = try itemId.map { root.appendingPathComponent("\(MediaLayout.downloads)/\(try MediaLayout.component($0))") } ?? root.appendingPathComponent(MediaLayout.downloads)
        return MediaDiscovery.directorySize(folder)
    }

    /// Removes a version, a season, or a whole item (movie or series), then its metadata
    /// entries and any folder left empty. Nothing to remove is `CourierError/Code/notFound`.
    public func remove(itemId: String, versionId: String? = nil, season: Int? = nil) throws {
        let folder = root.appendingPathComponent("\(MediaLayout.downloads)/\(try MediaLayout.component(itemId))")
        let store = MetadataStore(root: root)
        guard FileManager.default.fileExists(atPath: folder.path) else { throw CourierError(.notFound, "no item \(itemId) in the library") }
        if let season {
            let seasonFolder = folder.appendingPathComponent(MediaLayout.seasonName(season))
            guard FileManager.default.fileExists(atPath: seasonFolder.path) else { throw CourierError(.notFound, "item \(itemId) has no season \(season)") }
            try removeFile(seasonFolder)
            try store.reaggregateSeries(folder: folder)
        } else if let versionId {
            let v = try MediaLayout.component(versionId, "version id")
            let discovery = MediaDiscovery(root: root)
            let files = discovery.files(in: folder, depth: 2).filter { $0.lastPathComponent.contains("-\(v).") }
            guard !files.isEmpty else { throw CourierError(.notFound, "item \(itemId) has no version \(versionId)") }
            for file in files { try removeFile(file) }
            try store.removeVersion(v, under: folder)
        } else {
            try removeFile(folder)
        }
        MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
    }
}
