import ArgumentParser
import Courier
import CourierAttachments
import Foundation
import GRDB

/// Shared flags of `courier attachments`.
struct AttachmentOptions: ParsableArguments {
    @Option(name: .long, help: "The app's database file (the attachments table lives there).")
    var db: String

    @Option(name: .long, help: "Remote storage: http(s)://base, s3://bucket/prefix?endpoint=…&region=… (AWS_* credentials), tus+http(s)://endpoint?files=http(s)://where-files-are-served, ietf+http(s)://uploads?files=http(s)://where-files-are-served (the resumable upload draft), or file:///dir.")
    var remote: String

    @Option(name: .long, help: "The attachments directory (default: 'attachments' beside the database).")
    var dir: String?

    @Option(name: .long, help: "The attachments table's name.")
    var table: String = "attachments"

    @Option(name: [.customShort("H"), .long], help: "A header for http(s) remotes, 'Name: value' (repeatable); never stored.")
    var header: [String] = []

    @Flag(name: .shortAndLong, help: "Log what the queue and the engine do.")
    var verbose = false

    func open(parallel: Int = 4, transport: (any HTTPTransport)? = nil, uploadBytesPerSecond: Int64? = nil,
              uploadProgress: (@Sendable (Attachment, UploadProgress) -> Void)? = nil) throws -> (DatabasePool, AttachmentQueue) {
        let dbURL = URL(fileURLWithPath: db).standardizedFileURL
        var config = Configuration()
        config.busyMode = .timeout(10)
        let pool: DatabasePool
        do { pool = try DatabasePool(path: dbURL.path, configuration: config) } catch {
            throw CourierError(.database, "cannot open \(db)", underlying: error)
        }
        let directory = dir.map { URL(fileURLWithPath: $0).standardizedFileURL } ?? dbURL.deletingLastPathComponent().appendingPathComponent("attachments")
        var options = AttachmentQueueOptions()
        options.tableName = table
        options.syncInterval = .zero
        options.maxConcurrentTransfers = max(1, parallel)
        options.uploadProgress = uploadProgress
        options.uploadBytesPerSecond = uploadBytesPerSecond
        let queue = try AttachmentQueue(database: pool, directory: directory, remoteStorage: try storage(transport: transport), options: options,
                                        transport: transport, logger: makeLogger(verbose: verbose))
        return (pool, queue)
    }

    func storage(transport: (any HTTPTransport)? = nil) throws -> any RemoteStorage {
        try RemoteOption.storage(remote, headers: header, transport: transport)
    }

}

/// The flags only `courier attachments sync` takes.
struct SyncOptions: ParsableArguments {
    @Option(name: .long, help: "The app's query of referenced attachment ids (first column), reconciled before a sync.")
    var watchSql: String?

    @Option(name: .long, help: "Extension for watched ids without a filename column.")
    var watchExtension: String?

    @Option(name: .long, help: "Transfers at once.")
    var parallel: Int = 4

    @Option(name: .long, help: "At most this many bytes per second per upload to S3 or tus; 500K, 2M or bytes.")
    var limitRate: ByteSize?

    /// Runs the watched query once.
    func watchedItems(_ pool: DatabasePool) async throws -> [WatchedAttachmentItem]? {
        guard let watchSql else { return nil }
        let ext = watchExtension
        do {
            return try await pool.read { db in
                try Row.fetchAll(db, sql: watchSql).compactMap { row in
                    var item = WatchedAttachmentItem(row: row, defaultExtension: ext)
                    item?.fileExtension = ext   // --watch-extension, over any file_extension column
                    return item
                }
            }
        } catch {
            throw CourierError(.invalidArgument, "the watched query failed: \(error)")
        }
    }
}

struct Attachments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload, download and delete attachments in sync with an app's database.",
        subcommands: [Save.self, Delete.self, SyncPass.self, ListAttachments.self])

    struct Save: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Save files as attachments queued for upload; prints one id per file.")
        @OptionGroup var options: AttachmentOptions
        @Argument(help: "Files to save.") var files: [String]
        @Option(name: .long, help: "The media type.") var mediaType: String?

        func run() async throws {
            do {
                let (_, queue) = try options.open()
                for file in files {
                    let url = URL(fileURLWithPath: file)
                    guard FileManager.default.fileExists(atPath: url.path) else { throw CourierError(.fileNotFound, "\(file) does not exist") }
                    let saved = try await queue.saveFile(from: url, mediaType: mediaType, fileExtension: nil)
                    Terminal.out(saved.id)
                }
                await queue.stopSync()
                try await queue.remoteStorage.shutdown()
            } catch let error as CourierError { throw failure(error) }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an attachment locally and queue its remote delete.")
        @OptionGroup var options: AttachmentOptions
        @Argument(help: "The attachment id.") var id: String

        func run() async throws {
            do {
                let (_, queue) = try options.open()
                try await queue.deleteFile(id: id)
                await queue.stopSync()
                try await queue.remoteStorage.shutdown()
                Terminal.out("Queued the delete of \(id).")
            } catch let error as CourierError { throw failure(error) }
        }
    }

    struct SyncPass: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sync", abstract: "Run one full sync pass, then exit (3 when transfers remain pending).")
        @OptionGroup var options: AttachmentOptions
        @OptionGroup var sync: SyncOptions
        @OptionGroup var stack: TransportOptions

        func run() async throws {
            do {
                let bars = UploadBars()
                let (pool, queue) = try options.open(parallel: sync.parallel, transport: stack.transport(),
                                                     uploadBytesPerSecond: sync.limitRate.map { max(1, $0.bytes) }) { attachment, progress in
                    bars.show(attachment.filename, progress)
                }
                defer { bars.finish() }
                if let items = try await sync.watchedItems(pool) { try await queue.reconcile(items) }
                try await queue.startSync()
                await queue.sync()
                await queue.stopSync()
                let reasons = await queue.pendingReasons
                try await queue.remoteStorage.shutdown()
                let all = try await queue.attachments()
                var counts: [AttachmentState: Int] = [:]
                for a in all { counts[a.state, default: 0] += 1 }
                Terminal.out(AttachmentState.allCases.map { "\($0): \(counts[$0] ?? 0)" }.joined(separator: "  "))
                let pending = all.filter { [.queuedUpload, .queuedDownload, .queuedDelete].contains($0.state) }
                if !pending.isEmpty {
                    // Why each stays pending, without -v: its last transfer's error.
                    for a in pending.prefix(20) {
                        var why = reasons[a.id].map { "\($0.code.rawValue): \($0.message)" } ?? "not tried in this pass (waiting for its retry)"
                        if a.state == .queuedDownload, reasons[a.id].map({ $0.code.rawValue == "E_REMOTE_NOT_FOUND" || $0.httpStatus == 404 }) == true,
                           (a.filename as NSString).pathExtension.isEmpty {
                            why += " (it is looked up as \(a.filename), without an extension: give the watched query a filename column or --watch-extension)"
                        }
                        Terminal.error("courier: \(a.id) (\(a.filename)) is still \(a.state.description): \(why)")
                    }
                    if pending.count > 20 { Terminal.error("courier: … and \(pending.count - 20) more") }
                    Terminal.error("courier: \(pending.count) attachment(s) still pending; run sync again")
                    throw ExitCode(ExitCodes.network)
                }
            } catch let error as CourierError { throw failure(error) }
        }
    }

    struct ListAttachments: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List attachments.")
        @OptionGroup var options: AttachmentOptions
        @Flag(name: .long, help: "Print JSON.") var json = false

        struct View: Codable {
            var id: String, filename: String, state: String, size: Int64?, hasSynced: Bool, mediaType: String?, localPath: String?
        }

        func run() async throws {
            do {
                let (_, queue) = try options.open()
                let views = try await queue.attachments().map { a in
                    View(id: a.id, filename: a.filename, state: a.state.description, size: a.size, hasSynced: a.hasSynced,
                         mediaType: a.mediaType, localPath: queue.localURL(for: a)?.path)
                }
                await queue.stopSync()
                try await queue.remoteStorage.shutdown()
                if json { return try printJSON(views) }
                for v in views { Terminal.out("\(v.id)  \(v.state.padding(toLength: 15, withPad: " ", startingAt: 0))  \(v.size.map(Format.bytes) ?? "-")  \(v.filename)") }
            } catch let error as CourierError { throw failure(error, json: json) }
        }
    }
}

/// Parses `--remote` and `--header` for the commands that talk to remote storage.
enum RemoteOption {
    static func storage(_ remote: String, headers: [String], transport: (any HTTPTransport)? = nil) throws -> any RemoteStorage {
        if remote.hasPrefix("s3://") { return S3RemoteStorage(configuration: try S3Configuration(url: remote), transport: transport) }
        if remote.hasPrefix("file://") {
            guard let url = URL(string: remote), url.isFileURL else { throw CourierError(.invalidURL, "a file remote is file:///absolute/dir") }
            return try LocalRemoteStorage(directory: url)
        }
        let parsed = try headers.map(HTTPFields.headerLine)
        if remote.hasPrefix("tus+") { return try TusRemoteStorage(url: remote, headers: parsed, transport: transport) }
        if remote.hasPrefix("ietf+") { return try DraftRemoteStorage(url: remote, headers: parsed, transport: transport) }
        return try HTTPRemoteStorage(baseURL: remote, headers: parsed, transport: transport)
    }
}
