import ArgumentParser
import Courier
@_spi(Testing) import CourierMedia
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
        let media: any MediaServer = try server.map { try JellyfinServer(baseURL: $0, token: token, transport: transport) } ?? OfflineServer()
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

/// The version in flight that `pause` and `cancel` act on.
struct VersionInFlight: ParsableArguments {
    @OptionGroup var options: MediaOptions
    @Argument(help: "The item id.") var itemId: String
    @Option(name: .customLong("version-id"), help: "The version; default: the item's only version in flight.") var versionId: String?
    @Flag(name: .long, help: "Print JSON.") var json = false

    /// Finds the version, runs `step` on it, and says `done` (`Paused film1/v1.`).
    func act(_ done: String, _ step: (MediaLibrary, MediaVersion) async throws -> Void) async throws {
        try await options.run(readOnly: true, json: json) { library in
            let version = try await MediaCommands.inFlight(library, itemId: itemId, versionId: versionId)
            try await step(library, version)
            if json { return try printJSON(MediaActionJSON(action: done.lowercased(), itemId: version.itemId, versionId: version.versionId)) }
            Terminal.out("\(done) \(version).")
        }
    }
}

/// `--json` of `pause` and `cancel`.
struct MediaActionJSON: Encodable {
    var ok = true
    var action: String
    var itemId: String
    var versionId: String
}

/// `--json` of `download` and `resume`: what is now in the library (absolute paths).
struct MediaReportJSON: Encodable {
    var ok = true
    var itemId: String
    var versionId: String
    var mediaPath: String
    var subtitlePaths: [String]
    var failedImages: [String]
    var failedSubtitles: [Int]

    init(_ report: MediaDownloadReport, _ version: MediaVersion, root: URL) {
        itemId = version.itemId
        versionId = report.versionId
        mediaPath = root.appendingPathComponent(report.mediaPath).path
        subtitlePaths = report.subtitlePaths.map { root.appendingPathComponent($0).path }
        failedImages = report.failedImages.map { root.appendingPathComponent($0).path }
        failedSubtitles = report.failedSubtitles
    }
}

/// `--transcode` and its settings.
struct TranscodeFlags: ParsableArguments {
    @Flag(name: .long, help: "Ask the server to transcode (Static=false) instead of sending the file as stored.") var transcode = false
    @Option(name: .long, help: "With --transcode: the container.") var container: String = "mp4"
    @Option(name: .customLong("video-codec"), help: "With --transcode: the video codec.") var videoCodec: String = "h264"
    @Option(name: .customLong("audio-codec"), help: "With --transcode: the audio codec.") var audioCodec: String = "aac"
    @Option(name: .customLong("max-bitrate"), help: "With --transcode: the maximum bitrate, bits per second.") var maxBitrate: Int = 4_000_000

    var options: TranscodeOptions? {
        transcode ? TranscodeOptions(container: container, videoCodec: videoCodec, audioCodec: audioCodec, maxBitrate: maxBitrate) : nil
    }
}

/// What the media commands share.
enum MediaCommands {
    /// `all`, or comma-separated indexes.
    static func subtitleChoice(_ text: String?) throws -> SubtitleChoice {
        guard let text else { return .none }
        if text == "all" { return .all }
        let indexes = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !indexes.isEmpty, indexes.allSatisfy({ $0 != nil && $0! >= 0 }) else { throw ValidationError("--subtitles takes all, or stream indexes such as 2,4.") }
        return .indexes(indexes.map { $0! })
    }

    /// The version in flight that the arguments name: the one given, or the item's only one.
    static func inFlight(_ library: MediaLibrary, itemId: String, versionId: String?) async throws -> MediaVersion {
        if let versionId { return MediaVersion(itemId: itemId, versionId: versionId) }
        let mine = try await library.inFlight().filter { $0.version.itemId == itemId }.map(\.version)
        guard let only = mine.first else { throw CourierError(.notFound, "nothing of item \(itemId) is downloading") }
        guard mine.count == 1 else {
            throw CourierError(.invalidArgument, "item \(itemId) has \(mine.count) versions in flight (\(mine.map(\.versionId).joined(separator: ", "))); name one with --version-id")
        }
        return only
    }

    /// Follows a version to its end with a progress line on stderr; its report, or its end
    /// as an error (paused, cancelled, failed).
    static func follow(_ library: MediaLibrary, _ version: MediaVersion, quiet: Bool) async throws -> MediaDownloadReport {
        var renderer = ProgressRenderer(label: "\(version.itemId) \(version.versionId)")
        defer { renderer.finish() }
        Interrupts.shared.onInterrupt { Task { try? await library.pause(version) } }   // Ctrl-C pauses, keeping the bytes; the stream then ends with `paused`
        for await event in library.events(for: version) {
            switch event {
            case let .progress(p): if !quiet { renderer.show(p) }
            case let .retrying(attempt, limit, error, delay): if !quiet { renderer.note("courier: \(version): attempt \(attempt) of \(limit) failed (\(error.code.rawValue)); again in \(delay)") }
            case .finishing: if !quiet { renderer.note("courier: \(version): media whole; writing metadata and images") }
            case .queued, .completed, .failed, .paused, .cancelled: if let report = try event.result(for: version) { return report }
            }
        }
        throw CourierError(.cancelled, "\(version) was interrupted")
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
        subcommands: [Download.self, OpenMedia.self, Status.self, PauseMedia.self, ResumeMedia.self, CancelMedia.self, ListMedia.self, Size.self, Clean.self, Remove.self, Migrate.self])

    struct Download: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Download an item (movie or episode) from a Jellyfin server; the token comes from JELLYFIN_TOKEN. Run it again after an interruption and it resumes.")
        @OptionGroup var options: MediaOptions
        @Option(name: .long, help: "The Jellyfin server's URL.") var server: String
        @Option(name: .customLong("version-id"), help: "The version (media source id); default: the first.") var versionId: String?
        @Option(name: .long, help: "Subtitle streams to download beside the media: all, or indexes such as 2,4.") var subtitles: String?
        @OptionGroup var transcode: TranscodeFlags
        @Flag(name: .customLong("keep-media"), help: "A version already in the library is not downloaded again: only the subtitles it lacks are fetched.") var keepMedia = false
        @Flag(name: .shortAndLong, help: "No progress output.") var quiet = false
        @Flag(name: .long, help: "Print JSON (the paths in the library) instead of the media file's path.") var json = false
        @OptionGroup var stack: TransportOptions
        @Argument(help: "The item id.") var itemId: String
        @Option(name: .customLong("chaos-pause-before-metadata-ms"), help: .hidden) var chaosPauseBeforeMetadata: Int?

        func validate() throws { _ = try MediaCommands.subtitleChoice(subtitles) }

        func run() async throws {
            Interrupts.shared.install()
            let choice = try MediaCommands.subtitleChoice(subtitles)
            try await options.run(server: server, json: json, transport: stack.transport()) { library in
                // Fault injection for tests only (a hidden flag): hold the window between the
                // media file's arrival and its metadata open, so a SIGKILL can land in it.
                if let ms = chaosPauseBeforeMetadata, ms > 0 { await library.setAfterMediaInPlace { try await Task.sleep(for: .milliseconds(ms)) } }
                let asked = MediaDownloadOptions(transcoding: transcode.options, subtitles: choice, keepsMediaInLibrary: keepMedia)
                let version = try await library.start(itemId: itemId, versionId: versionId, options: asked)
                let report = try await MediaCommands.follow(library, version, quiet: quiet)
                if json { return try printJSON(MediaReportJSON(report, version, root: options.rootURL)) }
                Terminal.out(options.rootURL.appendingPathComponent(report.mediaPath).path)
                for path in report.subtitlePaths { Terminal.error("courier: subtitle \(path)") }
                for image in report.failedImages { Terminal.error("courier: image not fetched (the item is complete): \(image)") }
                for index in report.failedSubtitles { Terminal.error("courier: subtitle \(index) not fetched (the item is complete)") }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Versions not yet in the library: queued, downloading, paused, failed or finishing, with their bytes.")
        @OptionGroup var options: MediaOptions
        @Flag(name: .long, help: "Print JSON.") var json = false
        func run() async throws {
            try await options.run(readOnly: true, json: json) { library in
                let transfers = try await library.inFlight()
                if json { return try printJSON(transfers) }
                if transfers.isEmpty { return Terminal.out("Nothing in flight.") }
                for t in transfers {
                    let size = t.totalBytes.map { "\(t.bytesReceived)/\($0) bytes" } ?? "\(t.bytesReceived) bytes"
                    let percent = t.fractionCompleted.map { String(format: " %.0f%%", $0 * 100) } ?? ""
                    let error = t.errorCode.map { "  \($0): \(t.errorMessage ?? "")" } ?? ""
                    Terminal.out("\(t.version.itemId)  \(t.version.versionId)  \(t.state)\(percent)  \(size)\(t.isTranscoded ? "  transcoded" : "")  \(t.name ?? "")\(error)")
                }
            }
        }
    }

    struct PauseMedia: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause a version's download, keeping its bytes; a `courier media download` running it stops within a second.")
        @OptionGroup var target: VersionInFlight
        func run() async throws { try await target.act("Paused") { try await $0.pause($1) } }
    }

    struct ResumeMedia: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused, failed or interrupted version (or all of them) in the foreground, from the bytes kept.")
        @OptionGroup var options: MediaOptions
        @Option(name: .long, help: "The Jellyfin server's URL (images, subtitles and the token's header come from it).") var server: String
        @Argument(help: "The item id.") var itemId: String?
        @Option(name: .customLong("version-id"), help: "The version; default: the item's only version in flight.") var versionId: String?
        @Flag(name: .long, help: "Resume every version in flight.") var all = false
        @Flag(name: .shortAndLong, help: "No progress output.") var quiet = false
        @Flag(name: .long, help: "Print JSON (one report per version; with --all, a list).") var json = false
        @OptionGroup var stack: TransportOptions

        func validate() throws {
            if (itemId == nil) == !all { throw ValidationError("Name one item id, or pass --all.") }
        }

        func run() async throws {
            Interrupts.shared.install()
            try await options.run(server: server, readOnly: true, json: json, transport: stack.transport()) { library in
                if all {
                    let versions = try await library.resumeAll(includePaused: true, includeFailed: true)
                    if versions.isEmpty { return json ? try printJSON([MediaReportJSON]()) : Terminal.out("Nothing to resume.") }
                    var failure: CourierError?
                    var done: [MediaReportJSON] = []
                    for version in versions {
                        do {
                            let report = try await MediaCommands.follow(library, version, quiet: quiet)
                            done.append(MediaReportJSON(report, version, root: options.rootURL))
                            if !json { Terminal.out(done.last!.mediaPath) }
                        } catch let error as CourierError {
                            Terminal.error("courier: \(version): \(error)")
                            failure = failure ?? error
                        }
                    }
                    if json, failure == nil { try printJSON(done) }
                    if let failure { throw failure }
                    return
                }
                let version = try await MediaCommands.inFlight(library, itemId: itemId!, versionId: versionId)
                try await library.resume(version)
                let report = try await MediaCommands.follow(library, version, quiet: quiet)
                if json { return try printJSON(MediaReportJSON(report, version, root: options.rootURL)) }
                Terminal.out(options.rootURL.appendingPathComponent(report.mediaPath).path)
            }
        }
    }

    struct CancelMedia: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel a version's download: its partial file goes (a copy already in the library stays).")
        @OptionGroup var target: VersionInFlight
        func run() async throws { try await target.act("Cancelled") { try await $0.cancel($1) } }
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

    struct Clean: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete what interrupted downloads left (partial and incoming files nothing owns), and paused or failed versions older than --abandoned-after; say what was reclaimed.")
        @OptionGroup var options: MediaOptions
        @Option(name: .customLong("abandoned-after"), help: "Also cancel paused or failed versions untouched this long (90s, 12h, 30d, 2w).") var age: Age?
        @Flag(name: .long, help: "Print JSON.") var json = false
        func run() async throws {
            try await options.run(readOnly: true, json: json) { library in
                let report = try await library.clean(abandonedAfter: age?.duration)
                if json { return try printJSON(report) }
                for file in report.removedFiles { Terminal.out("removed \(file)") }
                for version in report.abandonedVersions { Terminal.out("cancelled \(version)") }
                Terminal.out("reclaimed \(report.reclaimedBytes) bytes")
            }
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
