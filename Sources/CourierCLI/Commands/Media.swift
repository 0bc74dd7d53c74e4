import ArgumentParser
import Courier
import CourierMedia
import Foundation

/// Shared flag of `courier media`.
struct MediaOptions: ParsableArguments {
    @Option(name: .long, help: "The library folder (it holds Downloads/).")
    var root: String

    var rootURL: URL { URL(fileURLWithPath: root).standardizedFileURL }

    /// The library; a command that only reads (`mustExist`) refuses a folder with no
    /// library instead of making one.
    func library(server: String?, mustExist: Bool = false, transport: (any HTTPTransport)? = nil) throws -> MediaLibrary {
        if mustExist, !FileManager.default.fileExists(atPath: rootURL.appendingPathComponent(MediaLayout.downloads).path) {
            throw CourierError(.notFound, "no media library at \(rootURL.path) (no \(MediaLayout.downloads) folder)")
        }
        let token = ProcessInfo.processInfo.environment["JELLYFIN_TOKEN"]
        let media: any MediaServer = try server.map { try JellyfinServer(baseURL: $0, token: token) } ?? OfflineServer()
        return try MediaLibrary(root: rootURL, server: media, database: try CourierDatabase(path: rootURL.appendingPathComponent(".courier-media.sqlite").path),
                                transport: transport, logger: makeLogger(verbose: false))
    }

    func run(server: String? = nil, readOnly: Bool = false, json: Bool = false, transport: (any HTTPTransport)? = nil,
             _ body: (MediaLibrary) async throws -> Void) async throws {
        var library: MediaLibrary?
        do {
            let lib = try self.library(server: server, mustExist: readOnly, transport: transport)
            library = lib
            try await body(lib)
            await lib.shutdown()
            try await lib.mediaServer.shutdown()
        } catch let error as CourierError {
            await library?.shutdown()
            try? await library?.mediaServer.shutdown()   // already failing: that error is the one reported
            throw failure(error, json: json)
        }
    }
}

/// For the commands that need no server.
struct OfflineServer: MediaServer {
    func item(id: String) async throws -> MediaItem { throw CourierError(.invalidArgument, "this command needs --server") }
    func downloadURL(item: MediaItem, mediaSourceId: String?, container: String, isStatic: Bool) throws -> String { throw CourierError(.invalidArgument, "no server") }
    func imageURL(itemId: String, kind: MediaLayout.ImageKind) throws -> String { throw CourierError(.invalidArgument, "no server") }
    func authorizationHeaders() -> [(name: String, value: String)] { [] }
}

struct Media: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The offline media library: movies and series under Downloads/, versioned, with metadata.json and images.",
        subcommands: [Download.self, ListMedia.self, Size.self, Remove.self, Migrate.self])

    struct Download: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Download an item (movie or episode) from a Jellyfin server; the token comes from JELLYFIN_TOKEN. Run it again after an interruption and it resumes.")
        @OptionGroup var options: MediaOptions
        @Option(name: .long, help: "The Jellyfin server's URL.") var server: String
        @Option(name: .customLong("version-id"), help: "The version (media source id); default: the first.") var versionId: String?
        @OptionGroup var stack: TransportOptions
        @Argument(help: "The item id.") var itemId: String
        func run() async throws {
            Interrupts.shared.install()
            try await options.run(server: server, transport: stack.transport()) { library in
                let report = try await library.download(itemId: itemId, versionId: versionId)
                Terminal.out(options.rootURL.appendingPathComponent(report.mediaPath).path)
                for image in report.failedImages { Terminal.error("courier: image not fetched (the item is complete): \(image)") }
            }
        }
    }

    struct ListMedia: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List downloaded items and their versions.")
        @OptionGroup var options: MediaOptions
        @Flag(name: .long, help: "Print JSON.") var json = false
        func run() async throws {
            try await options.run(readOnly: true, json: json) { library in
                let entries = try library.catalog()
                if json { return try printJSON(entries) }
                for e in entries { Terminal.out("\(e.itemId)  \(e.itemType ?? "-")  \(e.displayTitle)  versions: \(e.versions.map(\.versionId).joined(separator: ", "))") }
            }
        }
    }

    struct Size: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bytes used by an item (movie or series), or the whole library.")
        @OptionGroup var options: MediaOptions
        @Argument(help: "The item id (default: the whole library).") var itemId: String?
        func run() async throws {
            try await options.run(readOnly: true) { library in Terminal.out(String(try library.size(itemId: itemId))) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an item, one version, or one season, with its metadata entries.")
        @OptionGroup var options: MediaOptions
        @Argument(help: "The movie or series id.") var itemId: String
        @Option(name: .customLong("version-id"), help: "Only this version (media source id).") var versionId: String?
        @Option(name: .long, help: "Only this season number.") var season: Int?
        func run() async throws {
            try await options.run(readOnly: true) { library in
                try await library.remove(itemId: itemId, versionId: versionId, season: season)
                Terminal.out("Removed.")
            }
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move legacy items (Metadata/Item.json, Media.*) into the current layout.")
        @OptionGroup var options: MediaOptions
        func run() async throws {
            try await options.run { library in
                for id in try await library.migrate() { Terminal.out(id) }
            }
        }
    }
}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Press DOWNLOAD: print the path to open when the download is complete, else (re)start it and say so.")
    @Argument(help: "The download's id.") var id: String
    @Option(name: .long, help: "The URL, for a download with no record yet.") var url: String?
    @Option(name: .shortAndLong, help: "The output path, for a download with no record yet.") var output: String?
    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func run() async throws {
        do {
            let downloader = Downloader(configuration: engine.configuration(), database: try store.open(), transport: try engine.transport(), logger: makeLogger(verbose: false))
            let existing = try await downloader.record(id: id)
            let request: DownloadRequest
            if let url, let output {
                let absolute = URL(fileURLWithPath: output).standardizedFileURL.path
                request = DownloadRequest(id: id, url: url, destination: String(absolute.dropFirst()))
            } else if let existing {
                request = DownloadRequest(id: id, url: existing.remoteUrl, destination: existing.localFinalPath, sha256: existing.expectedSHA256)
            } else {
                await downloader.shutdown()
                throw CourierError(.notFound, "no download with id \(id); give --url and -o to start one")
            }
            switch try await DownloadButton(downloader: downloader).press(request) {
            case let .open(file):
                await downloader.shutdown()
                Terminal.out(file.path)
            case let .inProgress(record):
                await downloader.shutdown()
                Terminal.out("\(id) is \(record.state.rawValue); nothing to do.")
            case let .error(error):
                await downloader.shutdown()
                throw error
            case .downloadStarted:
                Terminal.error("Downloading \(id)…")
                let code = await Foreground(downloader: downloader, quiet: false).watch([id])
                if code != ExitCodes.success { throw ExitCode(code) }
            }
        } catch let error as CourierError {
            throw failure(error)
        }
    }
}
