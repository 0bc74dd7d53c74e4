import Courier
import Crypto
import Foundation
import Logging

/// The offline media library (seed 003): `Downloads/` laid out by item, versioned media
/// files through the resumable engine, `metadata.json` at movie, series and season level.
public actor MediaLibrary {
    /// The folder that holds `Downloads/`.
    public nonisolated let root: URL
    let server: any MediaServer
    /// The media server the library was given (the app releases it: ``MediaServer/shutdown()``).
    public nonisolated var mediaServer: any MediaServer { server }
    let downloader: Downloader
    /// Whether the library made its downloader (and so shuts it down with itself).
    let ownsDownloader: Bool
    /// Whether ``shutdown()`` ran: nothing new starts, finishes or follows here (a shared
    /// downloader may still run).
    var isShutDown = false
    /// Where `root` is under the downloader's root (`""` for the library's own downloader).
    let enginePrefix: String
    let logger: Logger
    /// Free space required beyond the media's size (seed 003: 100 MiB).
    public var minimumFreeSpace: Int64 = 100 << 20
    /// A media file smaller than this is no film: it fails with `E_NOT_MEDIA` (16 KiB).
    public var minimumMediaSize: Int64 = 16 << 10
    /// How long a paused or failed version may stay before the sweep cancels it
    /// (``setAbandonedAfter(_:)``; `nil`: kept until the app says).
    public internal(set) var abandonedAfter: Duration?
    /// What the last sweep reclaimed (``clean(abandonedAfter:)``), `nil` before one ran.
    public internal(set) var lastCleanup: MediaCleanReport?

    /// Makes a library at `root` over `server`; `database` keeps the engine's records, so a
    /// two-hour film resumes after a relaunch.
    /// `protection` guards the `Downloads` folder (backup exclusion, data protection);
    /// it is applied again whenever the folder is recreated. `transport`: how the engine
    /// speaks HTTP (`nil`: the platform's default, URLSession on Apple platforms).
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
        downloader = Downloader(configuration: config, database: database, transportOrDefault: transport, logger: logger)
        try Self.routeCredentials(of: server, through: downloader)
        ownsDownloader = true
        enginePrefix = ""
        if let protectionFailure { logger.warning("\(protectionFailure)") }
    }

    /// Makes a library at `root` over `server` that downloads through the app's
    /// `downloader`, shared with its other features (one scheduler, one concurrency limit,
    /// one background hand-off). `root` must be inside the downloader's root directory; the
    /// engine's records live in its database. The server's headers go only to the library's
    /// downloads (ids `media:`, `media-subtitle:`, `media-image:`). ``shutdown()`` leaves the
    /// downloader running: shut it down first to stop the library's downloads with it.
    public init(root: URL, server: any MediaServer, downloader: Downloader, protection: any FolderProtecting = SystemFolderProtection(),
                logger: Logger = Logger(label: "courier.media")) throws {
        self.root = root.standardizedFileURL
        self.server = server
        self.logger = logger
        folder = LibraryFolder(url: root.appendingPathComponent(MediaLayout.downloads), protection: protection)
        _ = try folder.ensure()
        protectionFailure = folder.applyProtection()
        enginePrefix = try downloader.relativePrefix(of: root)
        for prefix in ["media:", Self.subtitlePrefix, Self.imagePrefix] {   // made with a downloader of the library's own
            try downloader.database.adoptFeatureRecords(idPrefix: prefix, pathPrefix: enginePrefix)
        }
        try Self.routeCredentials(of: server, through: downloader)
        self.downloader = downloader
        ownsDownloader = false
        if let protectionFailure { logger.warning("\(protectionFailure)") }
    }

    /// Whether this library or its downloader was shut down: nothing will move here again.
    func stopped() async -> Bool {
        if isShutDown { return true }
        return await downloader.isShutDown
    }

    /// Refuses new work after ``shutdown()``.
    func checkOpen() throws {
        if isShutDown { throw CourierError(.invalidState, "the media library was shut down") }
    }

    /// The media server's headers, asked at request time (never stored), for the library's
    /// downloads only.
    static func routeCredentials(of server: any MediaServer, through downloader: Downloader) throws {
        let credentials = Credentials(headers: { _, _ in server.authorizationHeaders() })
        for prefix in ["media:", subtitlePrefix, imagePrefix] {
            try downloader.routeCredentials(forIDsWithPrefix: prefix, urlRefresher: nil, requestAuthorizer: credentials)
        }
    }

    /// The id prefixes of a version's subtitles and images.
    static let subtitlePrefix = "media-subtitle:", imagePrefix = "media-image:"

    /// A test hook run between the media file's arrival and the metadata write (where a
    /// kill would orphan the file): for tests, and the CLI's hidden chaos flag only.
    var afterMediaInPlace: (@Sendable () async throws -> Void)?
    /// Sets ``afterMediaInPlace``.
    @_spi(Testing) public func setAfterMediaInPlace(_ hook: (@Sendable () async throws -> Void)?) { afterMediaInPlace = hook }

    /// The library's own events (finishing and the ends it decides).
    let hub = MediaEventHub()
    /// The jobs of versions not yet in the library.
    nonisolated var jobs: MediaJobStore { MediaJobStore(root: root) }
    /// The task finishing each version in flight here, by engine id.
    var finishers: [String: Finisher] = [:]
    /// A task finishing a version; its id tells it apart from one launched after it.
    struct Finisher { let id: UUID; let task: Task<Void, Never> }
    /// Start, pause, resume and cancel run one at a time per version (by engine id): each
    /// waits on the engine between its checks and its changes, where another would slip in.
    let steering = TurnsByKey()

    /// Runs `body` alone among the steering calls of one version.
    func exclusively<T>(_ taskId: String, _ body: () async throws -> T) async throws -> T {
        try await steering.run(taskId, body)
    }

    /// The library folder, protected on (re)creation.
    let folder: LibraryFolder
    /// The last failure to protect the library folder, if any (the download went on).
    public private(set) var protectionFailure: CourierError?

    /// Deletes a file or folder; a failure is an error with its code (a file already gone is fine).
    func removeFile(_ url: URL) throws {
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

    /// Runs a change of `metadata.json` files holding the library's lock
    /// (`.courier-media.lock`): two processes finishing versions of one film never drop each
    /// other's entry.
    func changingMetadata<T>(_ body: () async throws -> T) async throws -> T {
        try await FileCoordination.withLock(root.appendingPathComponent(".courier-media.lock"), of: root.appendingPathComponent(MediaLayout.downloads), .exclusive, body)
    }

    /// Sets the free space required beyond the media's size.
    public func setMinimumFreeSpace(_ bytes: Int64) { minimumFreeSpace = bytes }

    /// Stops downloads (resumable later, by ``resumeAll(includePaused:includeFailed:)``)
    /// and waits for the tasks that follow them.
    public func shutdown() async {
        isShutDown = true
        let engineDown = await downloader.isShutDown
        if ownsDownloader || engineDown {
            await downloader.shutdown()
            for finisher in finishers.values { await finisher.task.value }
        } else {
            // A shared downloader goes on: the library stops following it. A finisher stops
            // where it is (every step runs again), and the next start's resumeAll takes
            // each version up where the engine has it.
            for finisher in finishers.values { finisher.task.cancel() }
            for finisher in finishers.values { await finisher.task.value }
        }
        hub.shutdown()
    }

    // MARK: Queries

    /// Seed 003's rule: both the metadata entry and the media file must be there.
    public nonisolated func isItemVersionDownloaded(itemId: String, mediaSourceId: String?) -> Bool {
        let target = mediaSourceId ?? itemId
        let store = MetadataStore(root: root)
        let hasEntry = store.versions(forItem: itemId).contains { $0.normalizedSource(itemId: $0.itemId ?? itemId) == target }
        return hasEntry && MediaDiscovery(root: root).mediaFile(itemId: itemId, mediaSourceId: mediaSourceId, exact: true) != nil
    }

    /// Every item's metadata: movies and series (with their aggregated versions), and
    /// legacy items not migrated yet (`Metadata/Item.json` beside `Media.*`), read as the
    /// item's own version.
    public nonisolated func catalog() throws -> [DownloadMetadata] {
        let store = MetadataStore(root: root)
        let legacy = LegacyLayout(root: root)
        let folders = (try? FileManager.default.contentsOfDirectory(at: root.appendingPathComponent(MediaLayout.downloads), includingPropertiesForKeys: nil)) ?? []   // a folder that cannot be listed holds nothing to show
        return folders.sorted { $0.lastPathComponent < $1.lastPathComponent }.compactMap { folder in
            let file = folder.appendingPathComponent("metadata.json")
            if let meta = store.read(file) { return meta }
            if FileManager.default.fileExists(atPath: file.path) {
                // Unreadable: what is on disk still shows (the next download rewrites it).
                let seasons = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []).filter { $0.lastPathComponent.hasPrefix("Season-") }   // nothing listable: no seasons
                let versions = store.recoveredVersions(in: folder, itemId: folder.lastPathComponent)
                    + seasons.sorted { $0.lastPathComponent < $1.lastPathComponent }.flatMap { store.read($0.appendingPathComponent("metadata.json"))?.versions ?? [] }
                return DownloadMetadata(itemId: folder.lastPathComponent, itemType: seasons.isEmpty ? nil : "Series", displayTitle: folder.lastPathComponent, item: nil, versions: versions)
            }
            guard let item = legacy.item(in: folder), item.id == folder.lastPathComponent, legacy.legacyMedia(in: folder) != nil else { return nil }
            return DownloadMetadata(itemId: item.id, itemType: item.type.rawValue, displayTitle: item.name ?? item.id, item: item, versions: store.versions(forItem: item.id))
        }
    }

    /// Bytes under an item's folder (a movie or a series), or the whole library.
    public nonisolated func size(itemId: String? = nil) throws -> Int64 {
        let folder = try itemId.map { root.appendingPathComponent("\(MediaLayout.downloads)/\(try MediaLayout.component($0))") } ?? root.appendingPathComponent(MediaLayout.downloads)
        return MediaDiscovery.directorySize(folder)
    }

    /// Removes a version, a season, or a whole item (movie or series), then its metadata
    /// entries and any folder left empty. Downloads in flight there are cancelled first (a
    /// running one would write into the folder again). Nothing to remove is
    /// `CourierError/Code/notFound`.
    public func remove(itemId: String, versionId: String? = nil, season: Int? = nil) async throws {
        let folder = root.appendingPathComponent("\(MediaLayout.downloads)/\(try MediaLayout.component(itemId))")
        let inFlight = jobs.all().filter { job in
            (job.version.itemId == itemId && season == nil || job.item.seriesId == itemId && (season == nil || job.item.parentIndexNumber == season))
                && (versionId == nil || job.version.versionId == versionId)
        }
        for job in inFlight {
            do { try await cancel(job.version) } catch let error as CourierError where error.code == .notFound {}   // it ended meanwhile: removed below with the rest
        }
        guard FileManager.default.fileExists(atPath: folder.path) else {
            if !inFlight.isEmpty { return }
            throw CourierError(.notFound, "no item \(itemId) in the library")
        }
        try await changingMetadata { try removeHeld(folder: folder, itemId: itemId, versionId: versionId, season: season, inFlight: !inFlight.isEmpty) }
    }

    /// ``remove(itemId:versionId:season:)`` once the downloads there are cancelled, holding
    /// the metadata lock.
    private func removeHeld(folder: URL, itemId: String, versionId: String?, season: Int?, inFlight: Bool) throws {
        let store = MetadataStore(root: root)
        if let season {
            let seasonFolder = folder.appendingPathComponent(MediaLayout.seasonName(season))
            guard FileManager.default.fileExists(atPath: seasonFolder.path) else { throw CourierError(.notFound, "item \(itemId) has no season \(season)") }
            try removeFile(seasonFolder)
            try store.reaggregateSeries(folder: folder)
        } else if let versionId {
            let v = try MediaLayout.component(versionId, "version id")
            let discovery = MediaDiscovery(root: root)
            let files = discovery.files(in: folder, depth: 2).filter { $0.lastPathComponent.contains("-\(v).") }
            guard !files.isEmpty else {
                if !inFlight { throw CourierError(.notFound, "item \(itemId) has no version \(versionId)") }
                MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
                return
            }
            for file in files { try removeFile(file) }
            try store.removeVersion(v, under: folder)
        } else {
            try removeFile(folder)
        }
        MediaDiscovery.removeEmptyFolders(root.appendingPathComponent(MediaLayout.downloads))
    }
}
