import ArgumentParser
import Courier
import CourierAttachments
import CourierDocuments
import Foundation

/// Shared flags of `courier doc`.
struct DocOptions: ParsableArguments {
    @Option(name: .long, help: "The local folder mirroring the remote.")
    var dir: String

    @Option(name: .long, help: "Remote storage: http(s)://base, s3://bucket/prefix?endpoint=…, or file:///dir.")
    var remote: String

    @Option(name: [.customShort("H"), .long], help: "A header for http(s) remotes, 'Name: value' (repeatable); never stored.")
    var header: [String] = []

    @Option(name: .long, help: "Seconds without progress (no byte received, no status change) before the download is triggered again.")
    var idleTimeout: Int = 30

    @Option(name: .long, help: "Triggers after the first before giving up with E_TIMEOUT.")
    var retries: Int = 2

    @Flag(name: .long, help: "Print results and errors as JSON, with the error code.")
    var json = false

    func open(transport: (any HTTPTransport)? = nil) throws -> (MirrorContainer, Documents) {
        let root = URL(fileURLWithPath: dir).standardizedFileURL
        let database = try CourierDatabase(path: root.appendingPathComponent(".courier-documents.sqlite").path)
        let container = try MirrorContainer(root: root, storage: try RemoteOption.storage(remote, headers: header, transport: transport), database: database,
                                            transport: transport, logger: makeLogger(verbose: false))
        var options = DocumentsOptions()
        options.idleTimeout = .seconds(max(1, idleTimeout))
        options.maxRetriggers = max(0, retries)
        return (container, Documents(container: container, options: options))
    }

    /// Runs a document operation: results on stdout, errors as `CODE: message` on stderr (or
    /// JSON on stdout with --json), and the error code's exit status. Uploads an earlier run
    /// still owed (a write killed before its upload) are sent first and waited for at the
    /// end, unless `resumeUploads` is off (`doc status` only looks).
    func run(transport: TransportOptions? = nil, resumeUploads: Bool = true, _ body: (MirrorContainer, Documents) async throws -> Void) async throws {
        var container: MirrorContainer?
        do {
            let (c, docs) = try open(transport: transport?.transport())
            container = c
            if resumeUploads { try await c.resumeUploads() }
            try await body(c, docs)
            await c.flushUploads()
            await c.shutdown()
        } catch let error as CourierError {
            await container?.shutdown()
            throw failure(error, json: json)
        }
    }
}

/// What `courier doc --json` prints on success: real booleans and numbers.
struct DocResult: Encodable {
    var ok = true
    var created: Int?
    var exists: Bool?
    var text: String?
    var percent: Double?
    var uploads: [DocUploadJSON]?
}

/// One document's upload in `courier doc status --json`.
struct DocUploadJSON: Encodable {
    var path: String
    var state: String
    var attempts: Int?
    var code: String?
    var message: String?
    var remoteCopy: String?

    init(_ upload: DocumentUpload) {
        path = upload.path
        switch upload.status {
        case let .pending(attempts, error): state = "pending"; self.attempts = attempts; code = error?.code.rawValue; message = error?.message
        case let .failed(error): state = "failed"; code = error.code.rawValue; message = error.message
        case let .conflict(copy): state = "conflict"; code = CourierError.Code.conflict.rawValue; remoteCopy = copy
        }
    }

    /// One line of the plain listing.
    var line: String {
        [path, state, code, remoteCopy.map { "remote version kept as \($0)" } ?? message].compactMap { $0 }.joined(separator: "  ")
    }
}

struct Doc: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read-in-place documents in a folder mirroring remote storage: open/read is the truth, progress is advisory.",
        subcommands: [Placeholders.self, Exists.self, Read.self, Bytes.self, Write.self, Progress.self, Evict.self, Status.self, Sync.self])

    struct Placeholders: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create placeholders for every remote file not here yet.")
        @OptionGroup var options: DocOptions
        func run() async throws {
            try await options.run { container, _ in
                let created = try await container.createPlaceholders()
                if options.json { try printJSON(DocResult(created: created.count)) } else { created.forEach { Terminal.out($0) } }
            }
        }
    }

    struct Exists: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Whether the file or its placeholder is here (exit 0), or not (exit 6).")
        @OptionGroup var options: DocOptions
        @Argument var path: String
        func run() async throws {
            try await options.run { _, docs in
                let exists = docs.documentExists(path)
                if options.json { try printJSON(DocResult(exists: exists)) } else { Terminal.out(exists ? "yes" : "no") }
                if !exists { throw ExitCode(ExitCodes.notFound) }
            }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a document as UTF-8 text (downloading it first when needed).")
        @OptionGroup var options: DocOptions
        @OptionGroup var stack: TransportOptions
        @Argument var path: String
        func run() async throws {
            try await options.run(transport: stack) { _, docs in
                let text = try await docs.readInPlace(path)
                if options.json { try printJSON(DocResult(text: text)) } else { Terminal.raw(Data(text.utf8)) }
            }
        }
    }

    struct Bytes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write a document's bytes to stdout, streamed.")
        @OptionGroup var options: DocOptions
        @OptionGroup var stack: TransportOptions
        @Argument var path: String
        func run() async throws {
            try await options.run(transport: stack) { _, docs in
                for try await chunk in docs.readInPlaceStream(path) { Terminal.raw(chunk) }
            }
        }
    }

    struct Write: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replace a document with a file's content, atomically, and upload it.")
        @OptionGroup var options: DocOptions
        @Argument var path: String
        @Argument var file: String
        func run() async throws {
            try await options.run { container, docs in
                guard let data = FileManager.default.contents(atPath: file) else { throw CourierError(.fileNotFound, "\(file) cannot be read") }
                try await docs.writeInPlace(path, data: data)
                await container.flushUploads()
                let upload = await container.state(of: path).upload
                if options.json { try printJSON(DocResult(uploads: upload.map { [DocUploadJSON(DocumentUpload(path: path, status: $0, baseVersion: nil))] })) }
                else if let upload { Terminal.out("Wrote \(path); \(DocUploadJSON(DocumentUpload(path: path, status: upload, baseVersion: nil)).line)") }
                else { Terminal.out("Wrote and uploaded \(path).") }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the documents whose upload is pending, failed or in conflict (nothing listed: every write is uploaded).")
        @OptionGroup var options: DocOptions
        @Argument(help: "Only this document.") var path: String?
        func run() async throws {
            try await options.run(resumeUploads: false) { container, _ in
                let all = try await container.uploads().filter { path == nil || $0.path == path }.map(DocUploadJSON.init)
                if options.json { try printJSON(DocResult(uploads: all)) } else { all.forEach { Terminal.out($0.line) } }
            }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send every upload still owed (after a crash or offline), then list what is left.")
        @OptionGroup var options: DocOptions
        func run() async throws {
            try await options.run { container, _ in
                await container.flushUploads()
                let left = try await container.uploads().map(DocUploadJSON.init)
                if options.json { try printJSON(DocResult(uploads: left)) } else { left.forEach { Terminal.out($0.line) } }
            }
        }
    }

    struct Progress: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start downloading a document and print its percent until it is current.")
        @OptionGroup var options: DocOptions
        @Argument var path: String
        func run() async throws {
            try await options.run { container, docs in
                try await container.startDownloading(path, restart: false)
                for try await percent in docs.downloadProgress(path) {
                    if options.json { try printJSON(DocResult(percent: (percent * 10).rounded() / 10)) } else { Terminal.out(String(format: "%.1f%%", percent)) }
                }
            }
        }
    }

    struct Evict: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Turn a downloaded document back into a placeholder.")
        @OptionGroup var options: DocOptions
        @Argument var path: String
        func run() async throws {
            try await options.run { container, _ in
                try await container.evict(path)
                if options.json { try printJSON(DocResult()) } else { Terminal.out("Evicted \(path).") }
            }
        }
    }
}
