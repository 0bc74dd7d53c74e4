import ArgumentParser
import Courier
import Foundation

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a download; a `courier get` running it in another process stops within a second.")

    @Argument(help: "The download's id.")
    var id: String

    @OptionGroup var store: StoreOptions

    func run() async throws {
        try await withDownloader(store: store) { try await $0.pause(id: id) }
        Terminal.out("Paused \(id).")
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Resume a paused, failed or interrupted download (or all of them) in the foreground.")

    @Argument(help: "The download's id.")
    var id: String?

    @Flag(name: .long, help: "Resume every download that is not completed.")
    var all = false

    @Option(name: .long, help: "Downloads at once, with --all.")
    var parallel: Int = 4

    @Option(name: .long, help: "The full URL again, for a download whose URL carried a secret (a token, a signature): secrets are never stored.")
    var url: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header to send, \"Name: value\" (repeatable); sent only to the download's own origin, never stored.")
    var headers: [String] = []

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log what the engine does.")
    var verbose = false

    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if (id == nil) == !all { throw ValidationError("Name one download id, or pass --all.") }
        if url != nil, id == nil { throw ValidationError("--url goes with one download id.") }
        _ = try Get.parseHeaders(headers)
    }

    func run() async throws {
        Interrupts.shared.install()
        let headerPairs = try Get.parseHeaders(headers)
        do {
            guard let database = try store.openExisting() else {
                if id != nil { throw CourierError(.notFound, "no download with id \(id!)") }
                return Terminal.out("Nothing to resume.")
            }
            var configuration = engine.configuration()
            configuration.maxConcurrentDownloads = max(1, parallel)
            let downloader = Downloader(configuration: configuration, database: database, transport: try engine.transport(),
                                        requestAuthorizer: headerPairs.isEmpty ? nil : StaticHeaders(headerPairs), logger: makeLogger(verbose: verbose))
            if let id {
                try await HandOffs.recover(downloader, store: store)   // a hand-off a killed process left ends first
                // Never send `token=REDACTED`: a URL whose secret was not stored needs it again.
                if url == nil, let record = try await downloader.record(id: id), Redactor.isRedacted(url: record.remoteUrl) {
                    await downloader.shutdown()
                    throw CourierError(.urlNeeded, "the URL of \(id) carried a secret, which Courier never stores. "
                        + "Run the original `courier get` command again, or `courier resume \(id) --url URL`.")
                }
                let events = Foreground.subscribe(id, downloader)   // before the resume starts it: no event missed
                try await downloader.resume(id: id, url: url)
                let code = await Foreground(downloader: downloader, quiet: quiet).watch([id], streams: [id: events])
                if code != ExitCodes.success { throw ExitCode(code) }
                return
            }
            // Every unfinished download, in one statement; those another process runs (a
            // live lease) are left to it. One event stream follows them all, subscribed
            // before anything starts so no final event is missed.
            let events = downloader.events()
            try await HandOffs.recover(downloader, store: store)
            let count = try await downloader.resumeAllPending(includePaused: true, includeFailed: true)
            if count == 0 {
                await downloader.shutdown()
                return Terminal.out("Nothing to resume.")
            }
            // Counted, not listed: every download this engine runs is one of them.
            let code = await BatchWatch(downloader: downloader, quiet: quiet).watch(events, pending: PendingDownloads(count: count))
            if code != ExitCodes.success { throw ExitCode(code) }
        } catch let error as CourierError {
            throw failure(error)
        }
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Cancel a download: its partial file and record are deleted (a finished file is kept).")

    @Argument(help: "The download's id.")
    var id: String

    @OptionGroup var store: StoreOptions

    func run() async throws {
        try await withDownloader(store: store) { try await $0.cancel(id: id) }
        Terminal.out("Cancelled \(id).")
    }
}

/// Runs one control operation on a downloader over the CLI's existing database, always
/// shutting it down, and turns a Courier error into its exit code. No database: no such
/// download (and none is created).
func withDownloader(store: StoreOptions, _ body: (Downloader) async throws -> Void) async throws {
    do {
        guard let database = try store.openExisting() else { throw CourierError(.notFound, "no downloads recorded at \(store.databasePath)") }
        let downloader = Downloader(configuration: DownloaderConfiguration(rootDirectory: URL(fileURLWithPath: "/")), database: database, logger: makeLogger(verbose: false))
        do {
            try await body(downloader)
        } catch {
            await downloader.shutdown()
            throw error
        }
        await downloader.shutdown()
    } catch let error as CourierError {
        throw failure(error)
    }
}
