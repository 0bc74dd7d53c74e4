import ArgumentParser
@_spi(Testing) import CourierCore
import CourierAsyncHTTPClient
import Foundation
import GRDB

/// Where the CLI keeps its records.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The database file (default: $XDG_DATA_HOME/courier/courier.sqlite).")
    var db: String?

    var databasePath: String {
        if let db { return URL(fileURLWithPath: db).standardizedFileURL.path }
        let env = ProcessInfo.processInfo.environment
        let base: String
        if let xdg = env["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (env["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        }
        return base + "/courier/courier.sqlite"
    }

    func open() throws -> CourierDatabase { try CourierDatabase(path: databasePath) }

    /// The database for a command that only reads or changes existing downloads: `nil` when
    /// there is no database file yet (nothing is created for a look).
    func openExisting() throws -> CourierDatabase? {
        FileManager.default.fileExists(atPath: databasePath) ? try open() : nil
    }
}

/// How the CLI's engine behaves.
struct EngineOptions: ParsableArguments {
    @Option(name: .customLong("chaos-pause-after-rename-ms"), help: .hidden)
    var chaosPauseAfterRename: Int?

    /// For the completion-hook kill test only: an app's row written in the write that
    /// completes each download, held open this long so a SIGKILL can land inside it.
    @Option(name: .customLong("chaos-app-rows-pause-ms"), help: .hidden)
    var chaosAppRowsPause: Int?

    @Option(name: .long, help: "Failed attempts in a row before giving up.")
    var maxAttempts: Int = 8

    @Option(name: .long, help: "Seconds without a byte before an attempt is aborted and retried.")
    var idleTimeout: Int = 30

    @Option(name: .long, help: "Refuse files larger than this (E_BODY_TOO_LONG); 500M, 2G or bytes.")
    var maxSize: ByteSize?

    @Option(name: .long, help: "At most this many bytes per second per download, all connections together (curl's --limit-rate); 500K, 2M or bytes.")
    var limitRate: ByteSize?

    @Option(name: .long, help: "Also trust the CA certificates in this PEM file (--transport nio only).")
    var cacert: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify TLS certificates (development servers; --transport nio only). -k is curl's; aria2's -k (split size) is --min-split-size here.")
    var insecure = false

    @Option(name: .long, help: "Seconds a connection (and its TLS handshake) may take.")
    var connectTimeout: Int = 15

    @Option(name: .customLong("min-split-size"),
            help: "The smallest byte range a segmented download splits off; smaller files use one connection (4M, 1M, or bytes).")
    var minSplitSize: ByteSize = ByteSize(bytes: 4 << 20)

    @OptionGroup var choice: TransportOptions
    var stack: TransportOptions.Stack { choice.stack }

    func validate() throws {
        if stack == .urlsession, insecure || cacert != nil {
            throw ValidationError("--cacert and --insecure need --transport nio: URLSession trusts what the system trusts.")
        }
        // Past a day a timeout waits on nothing a person waits for; past Int64's nanoseconds
        // it overflowed (a crash, not an error).
        for (flag, seconds) in [("--idle-timeout", idleTimeout), ("--connect-timeout", connectTimeout)] where !(1...Self.longestTimeout).contains(seconds) {
            throw ValidationError("\(flag) takes 1 to \(Self.longestTimeout) seconds, not \(seconds).")
        }
    }

    /// The longest `--idle-timeout` and `--connect-timeout`: a day.
    static let longestTimeout = 86_400

    /// The HTTP transport the flags ask for, with the TLS trust they ask for (verified by default).
    func transport() throws -> any HTTPTransport {
        if stack == .urlsession { return try URLSessionBuild.required().transport() }
        let timeout = Duration.seconds(max(1, connectTimeout))
        if insecure { return AsyncHTTPClientTransport(connectTimeout: timeout, trust: .insecure) }
        if let cacert { return AsyncHTTPClientTransport(connectTimeout: timeout, trust: .additionalCA(pemFile: URL(fileURLWithPath: cacert).standardizedFileURL.path)) }
        return AsyncHTTPClientTransport(connectTimeout: timeout)
    }

    /// The CLI stores paths relative to `/`: a terminal user names files by absolute or
    /// working-directory paths, and no container moves under them.
    func configuration() -> DownloaderConfiguration {
        var c = DownloaderConfiguration(rootDirectory: URL(fileURLWithPath: "/"))
        c.retryPolicy.maxAttempts = max(1, maxAttempts)
        c.idleTimeout = .seconds(max(1, idleTimeout))
        c.maxFileSize = maxSize.map { max(0, $0.bytes) }
        c.maxBytesPerSecond = limitRate.map { max(1, $0.bytes) }
        c.minSegmentSize = max(64 << 10, minSplitSize.bytes)
        // Fault injection for scripts/chaos only (a hidden flag): hold the window between the
        // rename of the finished file and the record's update open, so a SIGKILL can land in it.
        if let ms = chaosPauseAfterRename, ms > 0 { c.pauseAfterRename = .milliseconds(ms) }
        return c
    }
}

extension EngineOptions {
    /// Stands in for an app that shares its database with Courier (`--chaos-app-rows-pause-ms`):
    /// a table `app_rows(id, localPath)` written by a completion hook.
    func registerChaosAppRows(on downloader: Downloader) async throws {
        guard let ms = chaosAppRowsPause else { return }
        try await MappedWriter(downloader.database.writer).write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS app_rows (id TEXT PRIMARY KEY, localPath TEXT NOT NULL)")
        }
        try downloader.onCompletion(ofIDsWithPrefix: "") { db, record in
            try db.execute(sql: "INSERT OR REPLACE INTO app_rows (id, localPath) VALUES (?, ?)", arguments: [record.id, record.localFinalPath])
            if ms > 0 { usleep(useconds_t(ms * 1000)) }
        }
    }
}

/// `--transport`, on every command that downloads or uploads.
struct TransportOptions: ParsableArguments {
    /// Which HTTP stack speaks for the engine.
    enum Stack: String, ExpressibleByArgument, CaseIterable {
        case nio, urlsession
    }

    @Option(name: .customLong("transport"), help: "The HTTP stack: nio (AsyncHTTPClient, the default here) or urlsession (the system's URLSession; FoundationNetworking on Linux).")
    var stack: Stack = .nio

    /// The transport of a feature (documents, attachments, media, uploads): its engine and
    /// its storage's or server's calls; AsyncHTTPClient for `nio` on every platform.
    func transport() throws -> (any HTTPTransport)? {
        stack == .urlsession ? try URLSessionBuild.required().transport() : AsyncHTTPClientTransport()
    }
}
