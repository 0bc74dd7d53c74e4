import ArgumentParser
import Courier
import Crypto
import Foundation

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL; run it again after an interruption and it resumes.")

    @Argument(help: "The http or https URL.")
    var url: String

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

    func run() async throws {
        do {
            _ = try URLPolicy.validate(url)
            let outputPath = try await resolveOutput()
            let relative = String(outputPath.dropFirst())   // the CLI's root is "/"
            let id = try self.id.map(SafePath.validateIdentifier) ?? Self.defaultID(for: outputPath)
            let database = try store.open()
            let downloader = Downloader(configuration: engine.configuration(), database: database, transport: engine.transport(), logger: makeLogger(verbose: verbose))
            let record = try await downloader.enqueue(DownloadRequest(id: id, url: url, destination: relative, sha256: sha256))
            if !quiet, record.bytesReceived > 0 {
                Terminal.error("Resuming \(id) from \(Format.bytes(record.bytesReceived)).")
            }
            let code = await Foreground(downloader: downloader, quiet: quiet).watch([id])
            if code != ExitCodes.success { throw ExitCode(code) }
        } catch let error as CourierError {
            throw failure(error)
        }
    }

    /// The absolute output path: `-o`, else the server's Content-Disposition name, else the
    /// URL's last path component, in the current directory.
    private func resolveOutput() async throws -> String {
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

    /// The same output path gives the same id, so running the command again resumes.
    static func defaultID(for path: String) -> String {
        "get-" + SHA256.hash(data: Data(path.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
