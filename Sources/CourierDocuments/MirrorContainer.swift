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

    /// Mirrors `storage` into `root`; `database` keeps the engine's download records (so a
    /// large document resumes after a relaunch).
    public init(root: URL, storage: any RemoteStorage, database: CourierDatabase, configure: (inout DownloaderConfiguration) -> Void = { _ in },
                logger: Logger = Logger(label: "courier.documents")) throws {
        self.root = root.standardizedFileURL
        self.storage = storage
        self.logger = logger
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if let resumable = storage as? any ResumableRemoteStorage {
            var config = DownloaderConfiguration(rootDirectory: root)
            config.freeSpaceReserve = 16 << 20
            config.retryPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(5), maxAttempts: 3)
            configure(&config)
            let link = KeyLink(storage: resumable, root: root)
            downloader = Downloader(configuration: config, database: database, urlRefresher: link, requestAuthorizer: link, logger: logger)
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
        "doc:" + SHA256.hash(data: Data(path.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
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
            guard let target = try? url(object.key) else { continue }
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
        if let downloader { try? await downloader.cancel(id: Self.downloadID(path)) }
        failures.withLock { $0[path] = nil }
    }

    // MARK: DocumentContainer

    /// The file or its placeholder is there.
    public func entryExists(_ path: String) -> Bool {
        guard let target = try? url(path) else { return false }
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
                try? await downloader.pause(id: id)
            }
            try await downloader.enqueue(DownloadRequest(id: id, url: try await resumable.downloadURL(for: attachment), destination: path))
            watch(path, target: target) {
                _ = try await downloader.waitForCompletion(id: id)
                try? await downloader.cancel(id: id)   // the record is done; the file stays
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
        guard let target = try? url(path) else { return DocumentState(status: nil) }
        let placeholder = Placeholder.read(for: target)
        if placeholder == nil, FileManager.default.fileExists(atPath: target.path) {
            return DocumentState(status: .current, percent: 100)
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
                throw CourierError(err == ENOENT ? .fileNotFound : .fileRead, "cannot open \(path): \(String(cString: strerror(err)))")
            }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: max(4096, chunkSize))
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CourierError(.fileRead, "reading \(path) failed: \(String(cString: strerror(errno)))")
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
        let temp = dir.appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil), let handle = FileHandle(forWritingAtPath: temp.path) else {
            throw CourierError(.fileWrite, "cannot write into the folder of \(path)")
        }
        do {
            try handle.write(contentsOf: data)
            try Durability.sync(handle)
            try handle.close()
            try await FileCoordination.withLock(target, .exclusive) {
                guard rename(temp.path, target.path) == 0 else { throw CourierError(.fileWrite, "cannot replace \(path)") }
                unlink(Placeholder.url(for: target).path)
            }
        } catch {
            try? handle.close()
            unlink(temp.path)
            throw error as? CourierError ?? CourierError(.fileWrite, "cannot write \(path)", underlying: error)
        }
        queueUpload(path, target: target)
    }

    private func queueUpload(_ path: String, target: URL) {
        let storage = self.storage
        let logger = self.logger
        let previous = uploads.withLock { $0[path] }
        let task = Task { [uploads] in
            await previous?.value
            var failures = 0
            while !Task.isCancelled {
                do {
                    // Upload a snapshot taken under a shared lock, so a later write cannot tear it.
                    let snapshot = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).upload")
                    try await FileCoordination.withLock(target, .shared) { try FileCopyForUpload.copy(target, snapshot) }
                    defer { unlink(snapshot.path) }
                    try await storage.upload(fileAt: snapshot, attachment: Attachment(id: path, filename: path, state: .queuedUpload))
                    break
                } catch {
                    failures += 1
                    logger.warning("upload of \(path) failed (\(failures)): \(error)")
                    try? await Task.sleep(for: RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(60)).delay(afterFailures: failures, retryAfter: nil))
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
        unlink(target.path)
        guard let input = FileHandle(forReadingAtPath: source.path) else { throw CourierError(.fileNotFound, "\(source.lastPathComponent) vanished") }
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: target.path, contents: nil), let output = FileHandle(forWritingAtPath: target.path) else {
            throw CourierError(.fileWrite, "cannot snapshot \(source.lastPathComponent)")
        }
        defer { try? output.close() }
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try output.write(contentsOf: chunk) }
    }
}

/// Collects chunks from a `@Sendable` callback.
final class DataCollector: @unchecked Sendable { // appended only from the one reading task
    private(set) var data = Data()
    func append(_ chunk: Data) { data.append(chunk) }
}

/// Fresh URLs and auth for the engine, from the placeholder's key.
struct KeyLink: URLRefreshing, RequestAuthorizing {
    let storage: any ResumableRemoteStorage
    let root: URL

    private func attachment(_ record: DownloadRecord) -> Attachment {
        let key = Placeholder.read(for: root.appendingPathComponent(record.localFinalPath))?.key ?? record.localFinalPath
        return Attachment(id: record.localFinalPath, filename: key, state: .queuedDownload)
    }

    func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String? {
        try await storage.downloadURL(for: attachment(record))
    }

    func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)] {
        try await storage.downloadHeaders(for: attachment(record))
    }
}
