import ArgumentParser
import Courier
import Crypto
import Foundation

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL (or every URL of a list); run it again after an interruption and it resumes.")

    @Argument(help: "The http or https URL.")
    var url: String?

    @Option(name: [.customShort("i"), .customLong("input-file")],
            help: "Download every URL listed in this file (aria2's format: a URL per line, then indented out=, dir=, sha256= lines); - reads stdin.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("max-concurrent-downloads")], help: "Downloads at once with -i.")
    var jobs: Int = 5

    @Option(name: [.customShort("x"), .customLong("connections")],
            help: "Connections per download (1-16): a large file from a server that serves ranges is fetched in that many parallel byte ranges.")
    var connections: Int = 1

    @Option(name: [.customShort("d"), .customLong("dir")], help: "The directory -i's files are saved in (default: the current one).")
    var directory: String?

    @Option(name: .shortAndLong, help: "Where to save the file (default: a name from the server or the URL, in the current directory).")
    var output: String?

    @Option(name: .long, help: "The SHA-256 the file must have; it is checked before the file is put in place.")
    var sha256: String?

    @Option(name: .long, help: "The download's id (default: derived from the output path).")
    var id: String?

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log what the engine does.")
    var verbose = false

    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if (url == nil) == (inputFile == nil) { throw ValidationError("Give one URL, or -i FILE.") }
        if inputFile != nil, output != nil || sha256 != nil || id != nil {
            throw ValidationError("-o, --sha256 and --id apply to one URL; with -i, use out= and sha256= lines.")
        }
        if jobs < 1 { throw ValidationError("-j must be at least 1.") }
        if !(1...16).contains(connections) { throw ValidationError("--connections takes 1 to 16.") }
    }

    func run() async throws {
        if let inputFile {
            do {
                let code = try await ListDownload(inputFile: inputFile, directory: directory, jobs: jobs, connections: connections, quiet: quiet, verbose: verbose,
                                                  store: store, engine: engine).run()
                if code != ExitCodes.success { throw ExitCode(code) }
                return
            } catch let error as CourierError {
                throw failure(error)
            }
        }
        guard let url else { return }
        do {
            _ = try URLPolicy.validate(url)
            let outputPath = try await resolveOutput()
            let relative = String(outputPath.dropFirst())   // the CLI's root is "/"
            let id = try self.id.map(SafePath.validateIdentifier) ?? Self.defaultID(for: outputPath)
            let database = try store.open()
            let downloader = Downloader(configuration: engine.configuration(), database: database, transport: engine.transport(), logger: makeLogger(verbose: verbose))
            // A finished download fetched again is revalidated: the server's current file for
            // this URL, or one conditional request and "already up to date".
            let before = FileIdentity(path: outputPath)
            let record = try await downloader.enqueue(DownloadRequest(id: id, url: url, destination: relative, sha256: sha256,
                                                                      connections: connections, revalidate: true))
            if !quiet, record.bytesReceived > 0 {
                Terminal.error("Resuming \(URL(fileURLWithPath: outputPath).lastPathComponent) from \(Format.bytes(record.bytesReceived)).")
            }
            let code = await Foreground(downloader: downloader, quiet: quiet).watch([id]) { _ in
                // A 304 leaves the very file that was there (same inode); a new version was renamed over it.
                before != nil && before == FileIdentity(path: outputPath) ? "already up to date" : nil
            }
            if code != ExitCodes.success { throw ExitCode(code) }
        } catch let error as CourierError {
            throw failure(error)
        }
    }

    /// The absolute output path: `-o`, else the server's Content-Disposition name, else the
    /// URL's last path component, in the current directory.
    private func resolveOutput() async throws -> String {
        let url = self.url ?? ""
        let cwd = FileManager.default.currentDirectoryPath
        if let output {
            guard !output.isEmpty, !output.hasSuffix("/") else {
                throw CourierError(.invalidPath, "-o must name a file, not a directory")
            }
            let absolute = URL(fileURLWithPath: output, relativeTo: URL(fileURLWithPath: cwd, isDirectory: true)).standardizedFileURL.path
            _ = try SafePath.validateRelative(String(absolute.dropFirst()))
            return absolute
        }
        var name = SafePath.sanitizedFileName(URL(string: url)?.lastPathComponent ?? "", fallback: "index.html")
        if name == "/" { name = "index.html" }
        if let suggested = await Self.contentDispositionName(url, transport: engine.transport()) { name = suggested }
        return URL(fileURLWithPath: cwd).appendingPathComponent(name).standardizedFileURL.path
    }

    /// Asks the server (HEAD) for a Content-Disposition file name, sanitized.
    static func contentDispositionName(_ url: String, transport: AsyncHTTPClientTransport) async -> String? {
        defer { Task { try? await transport.shutdown() } }
        guard let response = try? await transport.send(TransportRequest(url: url, method: "HEAD", headers: [("Accept-Encoding", "identity")])),
              (200..<300).contains(response.status),
              let header = response.headers.first(name: "Content-Disposition"),
              let name = try? ContentDisposition(parsing: header).fileName else { return nil }
        await response.body.drain()
        return SafePath.sanitizedFileName(name)
    }

    /// The file at a path as the file system knows it (device and inode): a rename over it
    /// gives another identity, a 304 leaves it as it was.
    struct FileIdentity: Equatable {
        let device: UInt64, inode: UInt64
        init?(path: String) {
            var st = stat()
            guard lstat(path, &st) == 0 else { return nil }
            device = UInt64(st.st_dev); inode = UInt64(st.st_ino)
        }
    }

    /// The same output path gives the same id, so running the command again resumes.
    static func defaultID(for path: String) -> String {
        "get-" + SHA256.hash(data: Data(path.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
