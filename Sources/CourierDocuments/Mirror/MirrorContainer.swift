import Courier
import CourierAttachments
import Foundation
import Logging

/// A local folder mirroring a `CourierAttachments/RemoteStorage`: a file not yet
/// downloaded is a ``Placeholder``; downloads go through Courier's resumable engine
/// (for HTTP and S3 remotes); a write's upload is remembered in the mirror's database until
/// the remote confirms it, so it survives a relaunch, and is sent only over the version it
/// replaces (a conflict keeps both).
///
/// Its own files (locks, upload snapshots) live in the hidden folder `.courier/` of the
/// root, never beside the user's documents.
public final class MirrorContainer: DocumentContainer {
    /// The local folder.
    public let root: URL
    let storage: any RemoteStorage
    let downloader: Downloader?
    /// Whether the container made its downloader (and so shuts it down with itself).
    let ownsDownloader: Bool
    /// Where `root` is under the downloader's root (`""` for the container's own downloader).
    let enginePrefix: String
    let logger: Logger
    let folder: MirrorFolder
    let sync: DocumentSyncStore
    let failures = Locked<[String: CourierError]>([:])
    let transfers = Locked<[String: (token: UUID, task: Task<Void, Never>)]>([:])
    /// Bytes received by each running engine download, from its progress events.
    let received = Locked<[String: Int64]>([:])
    let uploads = Locked<[String: (token: UUID, task: Task<Void, Never>)]>([:])
    /// How uploads retry: the engine's policy for this container's downloads.
    let uploadRetry: RetryPolicy

    /// Mirrors `storage` into `root`; `database` keeps the engine's download records (so a
    /// large document resumes after a relaunch) and the uploads still owed.
    /// `transport`: how the container's own downloader speaks HTTP (the platform's default
    /// when `nil`). Call ``resumeUploads()`` at launch.
    public convenience init(root: URL, storage: any RemoteStorage, database: CourierDatabase, configure: (inout DownloaderConfiguration) -> Void = { _ in },
                            transport: (any HTTPTransport)? = nil, logger: Logger = Logger(label: "courier.documents")) throws {
        var config = DownloaderConfiguration(rootDirectory: root)
        config.freeSpaceReserve = 16 << 20
        config.retryPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(5), maxAttempts: 3)
        configure(&config)
        let made = config
        try self.init(root: root, storage: storage, database: database, uploadRetry: made.retryPolicy, logger: logger, owns: true, prefix: "") {
            Downloader(configuration: made, database: database, transportOrDefault: transport, logger: logger)
        }
    }

    /// Mirrors `storage` into `root`, downloading through the app's `downloader`, shared
    /// with its other features (one scheduler, one concurrency limit, one background
    /// hand-off). `root` must be inside the downloader's root directory; the engine's
    /// records and the uploads still owed live in its database. ``shutdown()`` leaves the
    /// downloader running. Call ``resumeUploads()`` at launch.
    public convenience init(root: URL, storage: any RemoteStorage, downloader: Downloader, logger: Logger = Logger(label: "courier.documents")) throws {
        try Durability.createFolder(root)
        let prefix = try downloader.relativePrefix(of: root)
        try self.init(root: root, storage: storage, database: downloader.database, uploadRetry: downloader.configuration.retryPolicy,
                      logger: logger, owns: false, prefix: prefix) { downloader }
    }

    private init(root: URL, storage: any RemoteStorage, database: CourierDatabase, uploadRetry: RetryPolicy, logger: Logger, owns: Bool,
                 prefix: String, downloader make: () -> Downloader) throws {
        self.root = root.standardizedFileURL
        self.storage = storage
        self.logger = logger
        self.folder = MirrorFolder(root: self.root)
        self.sync = try DocumentSyncStore(database: database)
        try Durability.createFolder(root)
        self.uploadRetry = uploadRetry
        ownsDownloader = owns
        enginePrefix = prefix
        if let resumable = storage as? any ResumableRemoteStorage {
            // The placeholder's key names the remote object behind a record.
            let base = self.root
            let link = Credentials.storage(resumable) { record in
                let relative = record.localFinalPath.hasPrefix(prefix) ? String(record.localFinalPath.dropFirst(prefix.count)) : record.localFinalPath
                let path = MirrorFolder.document(forDestination: relative)
                let key = Placeholder.read(for: base.appendingPathComponent(path))?.key ?? path
                return Attachment(id: path, filename: key, state: .queuedDownload)
            }
            let engine = make()
            try database.adoptFeatureRecords(idPrefix: Self.downloadPrefix, pathPrefix: prefix)   // made with a downloader of the container's own
            try engine.routeCredentials(forIDsWithPrefix: Self.downloadPrefix, urlRefresher: link, requestAuthorizer: link)
            downloader = engine
        } else {
            downloader = nil
        }
    }

    /// Stops transfers and uploads (both resumable later: what is owed stays in the
    /// database) and releases the engine.
    public func shutdown() async {
        for task in transfers.withLock({ Array($0.values.map(\.task)) }) { task.cancel() }
        let running = uploads.withLock { Array($0.values.map(\.task)) }
        for task in running { task.cancel() }
        for task in running { await task.value }
        if ownsDownloader { await downloader?.shutdown() }
    }

    func url(_ path: String) throws -> URL { root.appendingPathComponent(try SafePath.validateRelative(path)) }

    /// What every engine id of a mirrored document starts with.
    static let downloadPrefix = "doc:"

    static func downloadID(_ path: String) -> String {
        SHA256Hex.shortID(downloadPrefix, of: path)
    }

    /// Runs `body` holding the coordination lock of the document at `path`.
    func withLock<T>(_ path: String, _ target: URL, _ mode: FileCoordination.Mode, _ body: () async throws -> T) async throws -> T {
        try await FileCoordination.withLock(try folder.lock(for: path), of: target, mode, body)
    }

    // MARK: DocumentContainer

    /// The file or its placeholder is there.
    public func entryExists(_ path: String) -> Bool {
        guard let target = try? url(path) else { return false }   // an invalid path exists nowhere
        return FileManager.default.fileExists(atPath: target.path) || FileManager.default.fileExists(atPath: Placeholder.url(for: target).path)
    }

    /// Present without placeholder: current (with its upload's state). Else the transfer's
    /// state (bytes from the engine's progress, else the partial file's length), else a
    /// placeholder alone: not downloaded. Nothing known: `nil`.
    public func state(of path: String) async -> DocumentState {
        guard let target = try? url(path) else { return DocumentState(status: nil) }   // an invalid path has no state
        let placeholder = Placeholder.read(for: target)
        if placeholder == nil, FileManager.default.fileExists(atPath: target.path) {
            let upload: DocumentUploadStatus?
            do { upload = try await sync.row(path)?.status } catch {
                logger.warning("cannot read the upload state of \(path): \(error)")
                upload = nil
            }
            return DocumentState(status: .current, percent: 100, upload: upload)
        }
        if let failure = failures.withLock({ $0[path] }) { return DocumentState(status: .failed(failure)) }
        let bytes = received.withLock { $0[path] } ?? PartialFile.length(at: root.appendingPathComponent(MirrorFolder.incoming(path) + ".partial"))
        let percent: Double? = placeholder.flatMap { p in p.size > 0 ? min(100, Double(bytes) / Double(p.size) * 100) : nil }
        if transfers.withLock({ $0[path] != nil }) { return DocumentState(status: .downloading, percent: percent, bytesReceived: bytes) }
        if placeholder != nil { return DocumentState(status: .notDownloaded, percent: percent ?? 0, bytesReceived: bytes) }
        return DocumentState(status: nil)
    }

    /// Reads the whole file under a shared lock.
    public func coordinatedRead(_ path: String) async throws -> Data {
        let box = DataCollector()
        try await coordinatedRead(path, chunkSize: 1 << 20) { chunk in box.append(chunk) }
        return box.data
    }

    /// Reads in chunks under a shared lock. No file at open: `E_FNF`; gone or failing
    /// during the read: `E_FNF_READ`.
    public func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws {
        let target = try url(path)
        guard FileManager.default.fileExists(atPath: target.path) else {
            throw CourierError(.fileNotFound, "\(path) does not exist")
        }
        try await withLock(path, target, .shared) {
            let fd = open(target.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let err = errno
                // Checked just above: gone since then is no such file; anything else is the read's.
                throw err == ENOENT ? CourierError(.fileNotFound, "\(path) does not exist") : FileErrors.error(err, "open", target, .read)
            }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: max(4096, chunkSize))
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw FileErrors.error(errno, "read", target, .read)
                }
                if n == 0 { break }
                try await body(Data(buffer[0..<n]))
            }
        }
    }
}

/// Collects chunks from a `@Sendable` callback.
final class DataCollector: @unchecked Sendable { // appended only from the one reading task
    private(set) var data = Data()
    func append(_ chunk: Data) { data.append(chunk) }
}
