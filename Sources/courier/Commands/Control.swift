import ArgumentParser
import Courier
import Foundation

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a download; a `courier get` running it in another process stops within a second.")

    @Argument(help: "The download's id.")
    var id: String

    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func run() async throws {
        try await withDownloader(store: store, engine: engine) { try await $0.pause(id: id) }
        Terminal.out("Paused \(id).")
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Resume a paused, failed or interrupted download (or all of them) in the foreground.")

    @Argument(help: "The download's id.")
    var id: String?

    @Flag(name: .long, help: "Resume every download that is not completed.")
    var all = false

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log what the engine does.")
    var verbose = false

    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if (id == nil) == !all { throw ValidationError("Name one download id, or pass --all.") }
    }

    func run() async throws {
        do {
            let database = try store.open()
            let downloader = Downloader(configuration: engine.configuration(), database: database, transport: engine.transport(), logger: makeLogger(verbose: verbose))
            var ids: [String]
            if let id {
                try await downloader.resume(id: id)
                ids = [id]
            } else {
                // Records another process runs (a live lease) are left to it.
                var failed: [String] = []
                for id in try await database.allRecords().filter({ $0.state == .failed }).map(\.id) {
                    do {
                        try await downloader.resume(id: id)
                        failed.append(id)
                    } catch let e as CourierError where e.code == .leased || e.code == .invalidState {
                        continue
                    }
                }
                ids = failed + (try await downloader.resumePendingDownloads(includePaused: true))
                let elsewhere = try await database.allRecords().filter { !ids.contains($0.id) && downloader.leaseOwner.isBlocked(by: $0) }
                if !elsewhere.isEmpty, !quiet {
                    Terminal.error("\(elsewhere.count) download(s) running in another process, left to it: \(elsewhere.map(\.id).joined(separator: " "))")
                }
            }
            if ids.isEmpty {
                await downloader.shutdown()
                return Terminal.out("Nothing to resume.")
            }
            let code = await Foreground(downloader: downloader, quiet: quiet, leftToOthersIsFine: all).watch(ids)
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
    @OptionGroup var engine: EngineOptions

    func run() async throws {
        try await withDownloader(store: store, engine: engine) { try await $0.cancel(id: id) }
        Terminal.out("Cancelled \(id).")
    }
}

/// Runs one control operation on a downloader over the CLI's database, always shutting it
/// down, and turns a Courier error into its exit code.
func withDownloader(store: StoreOptions, engine: EngineOptions, _ body: (Downloader) async throws -> Void) async throws {
    do {
        let downloader = Downloader(configuration: engine.configuration(), database: try store.open(), logger: makeLogger(verbose: false))
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
