import Courier
import CourierAttachments
import Crypto
import Foundation
import Logging

/// A local folder mirroring a `CourierAttachments/RemoteStorage`: a file not yet
/// downloaded is a ``Placeholder``; downloads go through Courier's resumable engine
/// (for HTTP and S3 remotes), writes upload in the background.
public final class MirrorContainer: DocumentContainer {
    /// The local folder.
    public let root: URL
    let storage: any RemoteStorage
    let downloader: Downloader?
    let logger: Logger
    private let failures = Locked<[String: CourierError]>([:])
    private let transfers = Locked<[String: Task<Void, Never>]>([:])
    private let uploads = Locked<[String: Task<Void, Never>]>([:])
    private let uploadFailures = Locked<[String: CourierError]>([:])
    /// How uploads retry: the engine's policy for this container's downloads.
    private let uploadRetry: RetryPolicy

    /// Mirrors `storage` into `root`; `database` keeps the engine's download records (so a
    /// large document resumes after a relaunch).
    /// `transport`: how the engine speaks HTTP for downloads (`URLSessionTransport` in an
    /// app; AsyncHTTPClient by default).
    public init(root: URL, storage: any RemoteStorage, database: CourierDatabase, configure: (inout DownloaderConfiguration) -> Void = { _ in },
                transport: (any HTTPTransport)? = nil, logger: Logger = Logger(label: "courier.documents")) throws {
        self.root = root.standardizedFileURL
        self.storage = storage
        self.logger = logger
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var config = DownloaderConfiguration(rootDirectory: root)
        config.freeSpaceReserve = 16 << 20
        config.retryPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(5), maxAttempts: 3)
        configure(&config)
        uploadRetry = config.retryPolicy
        if let resumable = storage as? any ResumableRemoteStorage {
            // The placeholder's key names the remote object behind a record.
            let base = self.root
            let link = Credentials.storage(resumable) { record in
                let key = Placeholder.read(for: base.appendingPathComponent(record.localFinalPath))?.key ?? record.localFinalPath
                return Attachment(id: record.localFinalPath, filename: key, state: .queuedDownload)
            }
            downloader = Downloader(configuration: config, database: database, transport: transport, urlRefresher: link, requestAuthorizer: link, logger: logger)
        } else {
            downloader = nil
        }
    }

    /// Stops transfers (resumable later) and releases the engine.
    public func shutdown() async {
        for task in transfers.withLock({ Array($0.values) }) { task.cancel() }
        await downloader?.shutdown()
    }

    func url(_ path: String) throws -> URL { root.appendingPathComponent(try SafePath.validateRelative(path)) }

    static func downloadID(_ path: String) -> String {
        SHA256Hex.shortID("doc:", of: path)
    }

    // MARK: Placeholders

    /// Creates a placeholder for every remote object that has no local file. Returns the
    /// paths it created.
    @discardableResult
    public func createPlaceholders() async throws -> [String] {
        guard let listing = storage as? any RemoteListing else {
            throw CourierError(.invalidArgument, "this remote cannot list its files; placeholders need an S3 or folder remote")
        }
        var created: [String] = []
        for object in try await listing.list() {
            guard let target = try? url(object.key) else { continue }   // a remote key that is no safe local path is skipped, never written
            if FileManager.default.fileExists(atPath: target.path) { continue }
            try Placeholder(key: object.key, size: object.size, etag: object.etag).write(for: target)
            created.append(object.key)
        }
        return created
    }

    /// Turns a downloaded document back into a placeholder, keeping nothing stale: the file,
    /// any partial, and the engine's record go.
    public func evict(_ path: String) async throws {
        let target = try url(path)
        guard FileManager.default.fileExists(atPath: target.path) else {
            if Placeholder.read(for: target) != nil { return }
            throw CourierError(.fileNotFound, "\(path) is not here")
        }
        if uploads.withLock({ $0[path] != nil }) {
            throw CourierError(.invalidState, "\(path) has an upload pending; evicting it would lose the change")
        }
        let size = PartialFile.length(at: target)
        try await FileCoordination.withLock(target, .exclusive) {
            try Placeholder(key: path, size: size).write(for: target)
            unlink(target.path)
            unlink(target.path + ".partial")
        }
        if let downloader { try? await downloader.cancel(id: Self.downloadID(path)) }   // no engine record for this path is what we want
        failures.withLock { $0[path] = nil }
    }

    // MARK: DocumentContainer

    /// The file or its placeholder is there.
    public func entryExists(_ path: String) -> Bool {
        guard let target = try? url(path) else { return false }   // an invalid path exists nowhere
        return FileManager.default.fileExists(atPath: target.path) || FileManager.default.fileExists(atPath: Placeholder.url(for: target).path)
    }

    /// Starts the download of a placeholder (a no-op for a present file).
    public func startDownloading(_ path: String, restart: Bool) async throws {
        let target = try url(path)
        guard let placeholder = Placeholder.read(for: target) else { return }
        failures.withLock { $0[path] = nil }
        let attachment = Attachment(id: path, filename: placeholder.key, state: .queuedDownload)
        if let downloader, let resumable = storage as? any ResumableRemoteStorage {
            let id = Self.downloadID(path)
            if restart, await downloader.runningIDs.contains(id) {
                try? await downloader.pause(id: id)   // a download that already ended needs no pause
            }
            try await downloader.enqueue(DownloadRequest(id: id, url: try await resumable.downloadURL(for: attachment), destination: path))
            watch(path, target: target) {
                try await downloader.finishAndForget(id: id)
            }
        } else {
            if transfers.withLock({ $0[path] != nil }), !restart { return }
            let storage = self.storage
            watch(path, target: target) {
                try await storage.download(attachment, to: target)
            }
        }
    }

    /// Runs a transfer in the background; on success the placeholder goes (the file is in
    /// place first), on failure the error is kept for ``state(of:)``.
    private func watch(_ path: String, target: URL, _ transfer: @escaping @Sendable () async throws -> Void) {
        let task = Task { [failures, transfers] in
            do {
                try await transfer()
                unlink(Placeholder.url(for: target).path)
            } catch is CancellationError {
            } catch let error as CourierError where error.code == .paused {
                // Restarted: the new transfer reports.
            } catch {
                let e = error as? CourierError ?? CourierError(.network, "download of \(path) failed", underlying: error)
                failures.withLock { $0[path] = e }
            }
            transfers.withLock { _ = $0.removeValue(forKey: path) }
        }
        transfers.withLock { $0[path]?.cancel(); $0[path] = task }
    }

    /// Present without placeholder: current. Else the transfer's state, else a placeholder
    /// alone: not downloaded. Nothing known: `nil`.
    public func state(of path: String) async -> DocumentState {
        guard let target = try? url(path) else { return DocumentState(status: nil) }   // an invalid path has no state
        let placeholder = Placeholder.read(for: target)
        if placeholder == nil, FileManager.default.fileExists(atPath: target.path) {
            return DocumentState(status: .current, percent: 100, uploadFailure: uploadFailures.withLock { $0[path] })
        }
        if let failure = failures.withLock({ $0[path] }) { return DocumentState(status: .failed(failure)) }
        let percent: Double? = placeholder.flatMap { p in
            guard p.size > 0 else { return nil }
            let have = PartialFile.length(at: URL(fileURLWithPath: target.path + ".partial"))
            return min(100, Double(have) / Double(p.size) * 100)
        }
        if transfers.withLock({ $0[path] != nil }) { return DocumentState(status: .downloading, percent: percent) }
        if placeholder != nil { return DocumentState(status: .notDownloaded, percent: percent ?? 0) }
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
        try await FileCoordination.withLock(target, .shared) {
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

    /// Writes atomically (temp file, fsync, rename under an exclusive lock) and uploads in
    /// the background. A missing folder is `E_FNF_WRITE`.
    public func coordinatedWrite(_ path: String, data: Data) async throws {
        let target = try url(path)
        let dir = target.deletingLastPathComponent()
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDir), isDir.boolValue else {
            throw CourierError(.fileWrite, "the folder of \(path) does not exist")
        }
        let write = try AtomicWrite(replacing: target)
        do {
            try write.handle.write(contentsOf: data)
            try write.prepare()
            try await FileCoordination.withLock(target, .exclusive) {
                try write.putInPlace()
                unlink(Placeholder.url(for: target).path)
            }
        } catch {
            write.abandon()
            throw FileErrors.error(error, "write", target, .write)
        }
        queueUpload(path, target: target)
    }

    private func queueUpload(_ path: String, target: URL) {
        let storage = self.storage
        let logger = self.logger
        let previous = uploads.withLock { $0[path] }
        let task = Task { [uploads, uploadFailures, uploadRetry] in
            await previous?.value
            // The engine's retry rules: passing failures back off (and give up at the limit),
            // any other failure ends the upload at once; either way the document shows it.
            var retries = RetryBudget(policy: uploadRetry)
            while !Task.isCancelled {
                do {
                    // Upload a snapshot taken under a shared lock, so a later write cannot tear it.
                    let snapshot = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).upload")
                    try await FileCoordination.withLock(target, .shared) { try FileCopyForUpload.copy(target, snapshot) }
                    defer { unlink(snapshot.path) }
                    try await storage.upload(fileAt: snapshot, attachment: Attachment(id: path, filename: path, state: .queuedUpload))
                    uploadFailures.withLock { $0[path] = nil }
                    break
                } catch {
                    let e = error as? CourierError ?? CourierError(.unexpected, "upload of \(path) failed", underlying: error)
                    guard e.isPassing, case let .wait(delay, attempt, limit) = retries.failed(e, retryAfter: nil, progressed: false) else {
                        logger.error("upload of \(path) failed for good: \(e)")
                        uploadFailures.withLock { $0[path] = CourierError(e.code, "upload failed: \(e.message)", httpStatus: e.httpStatus) }
                        break
                    }
                    logger.warning("upload of \(path) failed (\(attempt) of \(limit)); retrying in \(delay): \(e)")
                    try? await Task.sleep(for: delay)   // a cancelled sleep ends early; the loop checks cancellation next
                }
            }
            uploads.withLock { if $0[path] != nil { $0[path] = nil } }
        }
        uploads.withLock { $0[path] = task }
    }

    /// Waits until every queued upload has been sent.
    public func flushUploads() async {
        while let next = uploads.withLock({ $0.values.first }) { await next.value }
    }
}

/// Plain streaming copy for upload snapshots.
enum FileCopyForUpload {
    static func copy(_ source: URL, _ target: URL) throws {
        guard let input = FileHandle(forReadingAtPath: source.path) else { throw CourierError(.fileNotFound, "\(source.lastPathComponent) vanished") }
        defer { try? input.close() }   // a read-only handle: nothing to lose on close
        // A snapshot is whole or absent: an upload never reads a half-copied one.
        let write = try AtomicWrite(replacing: target)
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try write.handle.write(contentsOf: chunk) }
            try write.commit()
        } catch {
            write.abandon()
            throw FileErrors.error(error, "snapshot", source, .write)
        }
    }
}

/// Collects chunks from a `@Sendable` callback.
final class DataCollector: @unchecked Sendable { // appended only from the one reading task
    private(set) var data = Data()
    func append(_ chunk: Data) { data.append(chunk) }
}

