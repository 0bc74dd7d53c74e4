import ArgumentParser
import Courier
import Crypto
import Foundation

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download URLs (or every URL of a list); run it again after an interruption and it resumes.",
        discussion: """
        Each URL is its own file (as curl and wget do; aria2 would take several URLs as mirrors \
        of one file). A file fetched before is fetched again only if the server's copy changed: \
        one conditional request, "already up to date" when it did not. Ctrl-C pauses; the same \
        command resumes.

        Short flags from two habits: -o, -O, -H and -k mean what they mean in curl (-k: \
        --insecure; aria2's -k is --min-split-size here); -i, -j, -x and -d mean what they mean \
        in aria2 (curl's -i prints headers, -x names a proxy and -d sends data: none of those \
        here).
        """)

    @Argument(help: "One or more http or https URLs.")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")],
            help: "Download every URL listed in this file (aria2's format: a URL per line, then indented out=, dir=, sha256= lines); - reads stdin.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("max-concurrent-downloads")], help: "Downloads at once, with several URLs or -i.")
    var jobs: Int = 5

    @Option(name: [.customShort("x"), .customLong("connections")],
            help: "Connections per download (1-16): a large file from a server that serves ranges is fetched in that many parallel byte ranges.")
    var connections: Int = 1

    @Option(name: [.customShort("d"), .customLong("dir")], help: "The directory files are saved in (default: the current one); made if missing.")
    var directory: String?

    @Option(name: .shortAndLong, help: "Where to save the file: a path, an existing directory to save into, or - for standard output (not resumable).")
    var output: String?

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Name the file after the server (Content-Disposition) or the URL: the default, as curl's -O.")
    var remoteName = false

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header to send, \"Name: value\" (repeatable); sent only to the URL's own origin, never stored.")
    var headers: [String] = []

    @Option(name: .long, help: "The SHA-256 the file must have; it is checked before the file is put in place.")
    var sha256: String?

    @Option(name: .long, help: "The download's id (default: derived from the output path).")
    var id: String?

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log what the engine does.")
    var verbose = false

    @Flag(name: .long, help: "Print one JSON document on standard output, with each download's outcome (path, bytes, state, code), and no progress.")
    var json = false

    @Option(name: .customLong("hand-off-at"),
            help: "Replay an app's background hand-off: once one download holds this much (10M, 512K), every unfinished one (queued ones too, with -i or several URLs) is fetched by a URLSession download task and spliced in, as when iOS suspends the app.")
    var handOffAt: ByteSize?

    @Flag(name: .customLong("chaos-hold-arrival"), help: .hidden)
    var chaosHoldArrival = false

    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if urls.isEmpty == (inputFile == nil) { throw ValidationError("Give one or more URLs, or -i FILE.") }
        if inputFile != nil, output != nil || sha256 != nil || id != nil {
            throw ValidationError("-o, --sha256 and --id apply to one URL; with -i, use out= and sha256= lines.")
        }
        if urls.count > 1, output != nil || sha256 != nil || id != nil {
            throw ValidationError("-o, --sha256 and --id apply to one URL; with several, use -d DIR (each file is named after its URL).")
        }
        if remoteName, output != nil { throw ValidationError("-O names the file after the URL; -o names it yourself: give one.") }
        if handOffAt != nil, output == "-" { throw ValidationError("--hand-off-at applies to downloads to files, not -o -.") }
        if json, inputFile != nil || output == "-" { throw ValidationError("--json applies to downloads to files named on the command line, without -i or -o -.") }
        if jobs < 1 { throw ValidationError("-j must be at least 1.") }
        if !(1...16).contains(connections) { throw ValidationError("--connections takes 1 to 16.") }
        _ = try Self.parseHeaders(headers)
    }

    /// `-H "Name: value"` as header pairs, by the rule every request follows
    /// (`HTTPFields.headerLine`): a usage error naming what is wrong.
    static func parseHeaders(_ raw: [String]) throws -> [(name: String, value: String)] {
        try raw.map { line in
            do { return try HTTPFields.headerLine(line) } catch { throw ValidationError("-H: \(error)") }
        }
    }

    func run() async throws {
        Interrupts.shared.install()   // Ctrl-C pauses from the very first moment
        let headerPairs = try Self.parseHeaders(headers)
        do {
            if let inputFile {
                let code = try await ListDownload(inputFile: inputFile, directory: directory, jobs: jobs, connections: connections, headers: headerPairs,
                                                  quiet: quiet, verbose: verbose, handOffAt: handOffAt?.bytes, holdsArrival: chaosHoldArrival,
                                                  store: store, engine: engine).run()
                if code != ExitCodes.success { throw ExitCode(code) }
                return
            }
            for url in urls { _ = try URLPolicy.validate(url) }
            if output == "-" {
                guard urls.count == 1 else { throw ValidationError("-o - takes one URL.") }
                let code = try await StreamToStdout(url: urls[0], headers: headerPairs, sha256: sha256, transport: engine.transport()).run()
                if code != ExitCodes.success { throw ExitCode(code) }
                return
            }
            // Every output path is settled before anything downloads: a bad one fails now.
            var targets: [(url: String, path: String)] = []
            for url in urls {
                targets.append((url, try await resolveOutput(url, headers: headerPairs)))
                if Interrupts.shared.isSet { throw ExitCode(ExitCodes.interrupted) }
            }
            let paths = targets.map(\.path)
            if let dup = paths.first(where: { p in paths.filter { $0 == p }.count > 1 }) {
                throw CourierError(.invalidArgument, "two URLs would save to \(dup): use -d with distinct names, or one URL per command")
            }
            var configuration = engine.configuration()
            configuration.maxConcurrentDownloads = max(1, jobs)
            let downloader = Downloader(configuration: configuration, database: try store.open(), transport: try engine.transport(),
                                        requestAuthorizer: headerPairs.isEmpty ? nil : StaticHeaders(headerPairs), logger: makeLogger(verbose: verbose))
            try await engine.registerChaosAppRows(on: downloader)
            let recovered = try await HandOffs.recover(downloader, store: store)   // a hand-off a killed process left ends first
            var ids: [String] = [], labels: [String: String] = [:], before: [String: Get.FileIdentity] = [:], kept: [String: Int64] = [:]
            var streams: [String: AsyncStream<DownloadEvent>] = [:]
            for (url, path) in targets {
                let relative = String(path.dropFirst())   // the CLI's root is "/"
                let id = try self.id.map(SafePath.validateIdentifier) ?? Self.defaultID(for: path)
                // A finished download fetched again is revalidated: the server's current file
                // for this URL, or one conditional request and "already up to date".
                if !recovered.contains(id) { before[id] = FileIdentity(path: path) }
                // The partial's real length, read before the engine can touch it: what resumes
                // (the record may lag it by a second).
                let onDisk = PartialFile.length(at: URL(fileURLWithPath: PartialFile.partialPath(of: path)))
                streams[id] = Foreground.subscribe(id, downloader)   // before the enqueue starts it: no event missed
                let record = try await downloader.enqueue(DownloadRequest(id: id, url: url, destination: relative, sha256: sha256,
                                                                          connections: connections, revalidate: !recovered.contains(id)))
                if record.state.isTerminal { streams[id] = nil }   // no run: its stored end is what the watch reads
                let name = URL(fileURLWithPath: path).lastPathComponent
                let resumed = record.state == .completed ? 0 : max(record.bytesReceived, onDisk)
                if !quiet, !json, resumed > 0 { Terminal.error("Resuming \(name) from \(Format.bytes(resumed)).") }
                if resumed > 0 { kept[id] = resumed }
                ids.append(id)
                labels[id] = name
            }
            let unchanged = before
            let transfers = try handOffAt.map { _ in try HandOffs.transfers(downloader, store: store) }
            if let transfers, let handOffAt {
                _ = HandOffs.handOff(ids, after: handOffAt.bytes, holdsArrival: chaosHoldArrival, transfers)
            }
            let code = await Foreground(downloader: downloader, quiet: quiet || json, json: json).watch(ids, streams: streams, labels: labels, kept: kept) { done in
                // A 304 leaves the very file that was there (same inode); a new version was renamed over it.
                unchanged[done.id].map { $0 == FileIdentity(path: "/" + done.localFinalPath) } == true ? "already up to date" : nil
            }
            transfers?.invalidate()
            if code != ExitCodes.success { throw ExitCode(code) }
        } catch let error as CourierError {
            throw failure(error, json: json)
        }
    }

    /// The absolute output path: `-o` (inside it, when it is an existing directory), else the
    /// server's Content-Disposition name or the URL's last path component, in `-d` or the
    /// current directory.
    private func resolveOutput(_ url: String, headers: [(name: String, value: String)]) async throws -> String {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        var folder = URL(fileURLWithPath: directory ?? cwd.path, isDirectory: true, relativeTo: cwd).standardizedFileURL
        if let output {
            guard !output.isEmpty else { throw CourierError(.invalidPath, "-o needs a path") }
            let target = URL(fileURLWithPath: output, relativeTo: folder).standardizedFileURL
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: target.path, isDirectory: &isDirectory), isDirectory.boolValue {
                folder = target   // an existing folder: save into it, named after the server or URL
            } else if output.hasSuffix("/") {
                throw CourierError(.invalidPath, "-o \(output): no such directory")
            } else {
                _ = try SafePath.validateRelative(String(target.path.dropFirst()))
                return target.path
            }
        } else if directory != nil {
            do { try Durability.createFolder(folder) } catch {
                throw FileErrors.error(error, "make the directory", folder, .write)
            }
        }
        var name = SafePath.sanitizedFileName(URL(string: url)?.lastPathComponent ?? "", fallback: "index.html")
        if name == "/" { name = "index.html" }
        if let suggested = try await Self.contentDispositionName(url, headers: headers, transport: engine.transport()) { name = suggested }
        let path = folder.appendingPathComponent(name).standardizedFileURL.path
        _ = try SafePath.validateRelative(String(path.dropFirst()))
        return path
    }

    /// Asks the server (HEAD) for a Content-Disposition file name, sanitized. Ctrl-C ends it.
    static func contentDispositionName(_ url: String, headers: [(name: String, value: String)], transport: any HTTPTransport) async -> String? {
        defer { Task { try? await transport.shutdown() } }   // the probe is over: nothing waits for its client
        let ask = Task { () -> String? in
            guard let response = try? await transport.send(TransportRequest(url: url, method: .head, headers: [("Accept-Encoding", "identity")] + headers)) else { return nil }   // the HEAD only suggests a name: the download itself reports errors
            await response.body.drain()
            guard (200..<300).contains(response.status), let header = response.headerFields.first(name: "Content-Disposition"),
                  let name = try? ContentDisposition(parsing: header).fileName else { return nil }   // an unparsable header suggests no name
            return SafePath.sanitizedFileName(name)
        }
        Interrupts.shared.onInterrupt { ask.cancel() }
        return await ask.value
    }

    /// The file at a path as the file system knows it (device and inode): a rename over it
    /// gives another identity, a 304 leaves it as it was.
    struct FileIdentity: Equatable, Sendable {
        let device: UInt64, inode: UInt64
        init?(path: String) {
            var st = stat()
            guard lstat(path, &st) == 0 else { return nil }
            device = UInt64(st.st_dev); inode = UInt64(st.st_ino)
        }
    }

    /// The same output path gives the same id, so running the command again resumes.
    static func defaultID(for path: String) -> String {
        SHA256Hex.shortID("get-", of: path, bytes: 8)
    }
}
