import ArgumentParser
import Courier
import CourierAttachments
import Foundation
import Logging

struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload files to S3, a tus server or a server of the resumable upload draft; run it again after an interruption and it resumes.",
        discussion: """
        The last argument says where. s3://bucket/key?endpoint=…&region=… is an S3 upload \
        (multipart past --part-size; credentials from AWS_ACCESS_KEY_ID and \
        AWS_SECRET_ACCESS_KEY); a key ending in / is a prefix the files' names are added to \
        (required with several files). http(s)://… is a creation URL, each file its own upload: \
        tus 1.0 by default; with --protocol ietf the IETF draft Resumable Uploads for HTTP (what \
        URLSession speaks since iOS 17); with --protocol auto the draft when the server answers \
        its creation with Upload-Draft-Interop-Version, else tus. The state of each upload (the S3 upload id and each part the server \
        confirmed, or the tus upload URL and offset) is kept in the database, so after Ctrl-C, \
        a kill or a lost connection the same command sends only what the server does not hold. \
        A file changed since its upload began is uploaded again from the start, never completed \
        as a mix of two versions. Prints where each file now is, one per line.
        """)

    @Argument(help: ArgumentHelp("The files to upload, then where to: s3://bucket/key (a prefix ending in / for several files) or an http(s) creation URL (tus, or the resumable upload draft).",
                                 valueName: "file-then-url"))
    var arguments: [String] = []

    @Option(name: .long, help: "For an http(s) URL: tus, ietf (the resumable upload draft) or auto (the draft if the server speaks it, else tus).")
    var `protocol`: UploadWire = .tus

    @Option(name: .long, help: "The draft's interop version every request says (3: iOS 17, 5: iOS 18.0, 6: iOS 18.1 on).")
    var ietfVersion: Int = 6

    @Option(name: .long, help: "S3 part size or tus chunk size, up to 1G (S3: at least 5M, and larger when a file would need over 10,000 parts): what an interruption can cost at most. An S3 part is read from the file as it is sent, not held in memory.")
    var partSize: ByteSize = ByteSize(bytes: 8 << 20)

    @Option(name: [.customShort("x"), .customLong("connections")], help: "S3 parts of one file sent at once (1-16).")
    var connections: Int = 4

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Files uploaded at once.")
    var jobs: Int = 8

    @Option(name: .long, help: "At most this many bytes per second per file, all its parts together (curl's --limit-rate); 500K, 2M or bytes.")
    var limitRate: ByteSize?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header to send to a tus server, \"Name: value\" (repeatable); never stored.")
    var headers: [String] = []

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .long, help: "Print one JSON document on standard output, with each file's outcome (URL, bytes, code), and no progress.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log what the upload does.")
    var verbose = false

    @Option(name: .customLong("hand-off-at"),
            help: "Replay an app's background hand-off: once the server confirmed this much (10M, 512K), what is left goes up in URLSession upload tasks from files (each S3 part, or the rest of a tus or draft upload), as when iOS suspends the app; then the upload completes.")
    var handOffAt: ByteSize?

    @Flag(name: .customLong("chaos-hold-arrival"), help: .hidden)
    var chaosHoldArrival = false

    @OptionGroup var store: StoreOptions

    @OptionGroup var stack: TransportOptions

    var files: [String] { Array(arguments.dropLast()) }
    var url: String { arguments.last ?? "" }

    func validate() throws {
        if arguments.count < 2 { throw ValidationError("Give one or more files, then the URL to upload them to.") }
        if !(1...16).contains(connections) { throw ValidationError("--connections takes 1 to 16.") }
        if jobs < 1 { throw ValidationError("-j must be at least 1.") }
        if partSize.bytes < 1 || partSize.bytes > 1 << 30 { throw ValidationError("--part-size takes one byte to 1G.") }
        if handOffAt != nil, files.count != 1 { throw ValidationError("--hand-off-at applies to one file.") }
        if handOffAt != nil, !url.hasPrefix("s3://"), `protocol` == .auto { throw ValidationError("--hand-off-at needs --protocol tus or ietf.") }
        if ResumableUploadDraft.Version(rawValue: ietfVersion) == nil { throw ValidationError("--ietf-version takes 3, 5 or 6.") }
        if files.count > 1, url.hasPrefix("s3://"), !(URLComponents(string: url)?.path ?? "").hasSuffix("/") {
            throw ValidationError("With several files, the S3 URL is a prefix ending in / (s3://bucket/dir/).")
        }
        _ = try Get.parseHeaders(headers)
    }

    func run() async throws {
        Interrupts.shared.install()   // Ctrl-C stops the uploads; the same command resumes them
        do {
            let sources = try files.map { try UploadSource(url: URL(fileURLWithPath: $0)) }
            let names = sources.map(\.url.lastPathComponent)
            if let duplicate = names.first(where: { name in names.filter { $0 == name }.count > 1 }), url.hasPrefix("s3://") {
                throw CourierError(.invalidArgument, "two files are named \(duplicate): they would go to the same key")
            }
            let destination = try PutDestination(url, wire: `protocol`, version: ResumableUploadDraft.Version(rawValue: ietfVersion) ?? .v6,
                                                 partSize: partSize.bytes, connections: connections, headers: Get.parseHeaders(headers),
                                                 transport: try stack.transport(), logger: makeLogger(verbose: verbose))
            let database = try store.open()
            try await HandOffs.recoverUploads(database, store: store)   // pieces a killed hand-off left end first
            let work = Task { try await upload(sources, to: destination, database: database, quiet: quiet || json) }
            Interrupts.shared.onInterrupt { work.cancel() }
            let outcomes = await work.result
            try? await destination.shutdown()   // the uploads' own outcomes are what count; the process ends next
            if Interrupts.shared.isSet {
                Terminal.error("courier: interrupted; run the same command to resume (the server keeps what it confirmed)")
                throw ExitCode(ExitCodes.interrupted)
            }
            var firstFailure: CourierError?
            var entries: [UploadJSON] = []
            for (source, outcome) in zip(sources, try outcomes.get()) {
                switch outcome {
                case .success(let location):
                    if !json { Terminal.out(location) }
                    entries.append(UploadJSON(file: source.url.path, ok: true, url: location, bytes: source.size))
                case .failure(let error):
                    let courierError = error as? CourierError ?? CourierError(.unexpected, "\(error)")
                    Terminal.error("courier: \(source.url.lastPathComponent): \(courierError.code.rawValue): \(courierError.message)")
                    firstFailure = firstFailure ?? courierError
                    entries.append(UploadJSON(file: source.url.path, ok: false, bytes: source.size, code: courierError.code.rawValue, message: courierError.message))
                }
            }
            if json { try printJSON(UploadsJSON(ok: firstFailure == nil, uploads: entries)) }
            if let firstFailure { throw ExitCode(ExitCodes.code(for: firstFailure.code)) }
        } catch let error as CourierError { throw failure(error, json: json) }
    }

    /// Uploads every file, `jobs` at once; one outcome per file, in order.
    private func upload(_ sources: [UploadSource], to destination: PutDestination, database: CourierDatabase, quiet: Bool) async throws -> [Result<String, any Error>] {
        let bars = UploadBars()
        let single = sources.count == 1
        let rate = limitRate?.bytes
        var outcomes = [Result<String, any Error>?](repeating: nil, count: sources.count)
        try await withThrowingTaskGroup(of: (Int, Result<String, any Error>).self) { group in
            var next = sources.indices.makeIterator()
            func start(_ index: Int) {
                let source = sources[index]
                group.addTask {
                    let id = SHA256Hex.shortID("put:", of: "\(source.url.path)\n\(destination.target(for: source))", bytes: 8)
                    let label = source.url.lastPathComponent
                    if !quiet, let kept = try await database.upload(id: id), kept.record.confirmedBytes > 0 {
                        Terminal.error("Resuming \(label): the server confirmed \(Format.bytes(kept.record.confirmedBytes)) before.")
                    }
                    let show: @Sendable (UploadProgress) -> Void = { progress in bars.show(label, progress) }
                    let journal = UploadJournal(database: database, id: id, maxBytesPerSecond: rate, progress: quiet || !single ? nil : show)
                    do {
                        let location: String
                        if let handOffAt = handOffAt?.bytes {
                            let transfers = try HandOffs.uploadSession(database: database, store: store)
                            defer { transfers.invalidate() }
                            location = try await HandOffs.upload(label, after: handOffAt, holdsArrival: chaosHoldArrival, journal: journal, transfers,
                                                                 folder: HandOffs.folder(store).appendingPathComponent("uploads"),
                                                                 run: { try await destination.upload(source, journal: journal) },
                                                                 handOff: { folder, journal in try await destination.handOffRemainder(source, journal: journal, folder: folder) })
                        } else {
                            location = try await destination.upload(source, journal: journal)
                        }
                        if !quiet { Terminal.error("Uploaded \(label) (\(Format.bytes(source.size))).") }
                        return (index, .success(location))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            for _ in 0..<jobs { if let index = next.next() { start(index) } }
            while let (index, outcome) = try await group.next() {
                outcomes[index] = outcome
                if let index = next.next() { start(index) }
            }
        }
        bars.finish()
        return outcomes.map { $0 ?? .failure(CourierError(.cancelled, "not uploaded")) }
    }
}

/// How `courier put` speaks to an http(s) URL.
enum UploadWire: String, ExpressibleByArgument, CaseIterable {
    case tus, ietf, auto
}

/// Where `courier put` sends files: an S3 bucket (a key, or a prefix), a tus endpoint, or a
/// creation URL of the resumable upload draft (with tus for a server that does not speak it).
private enum PutDestination: Sendable {
    case s3(S3RemoteStorage, bucket: String, key: String)
    case tus(TusUploader)
    case ietf(DraftUploader, fallback: TusUploader?)

    init(_ url: String, wire: UploadWire, version: ResumableUploadDraft.Version, partSize: Int64, connections: Int, headers: [(name: String, value: String)], transport: (any HTTPTransport)?, logger: Logger) throws {
        if url.hasPrefix("s3://") {
            guard var c = URLComponents(string: url) else { throw CourierError(.invalidURL, "not an S3 URL: \(url)") }
            let key = String(c.path.drop(while: { $0 == "/" }))
            c.path = ""
            var configuration = try S3Configuration(url: c.string ?? url)
            configuration.prefix = ""
            configuration.partSize = max(5 << 20, partSize)
            configuration.multipartThreshold = configuration.partSize
            configuration.uploadConcurrency = connections
            self = .s3(S3RemoteStorage(configuration: configuration, transport: transport, logger: logger), bucket: configuration.bucket, key: key)
            return
        }
        guard let endpoint = URL(string: url), ["http", "https"].contains(endpoint.scheme?.lowercased() ?? "") else {
            throw CourierError(.invalidURL, "courier put sends to s3://bucket/key or to a creation URL (http or https): \(url)")
        }
        let tus = { try TusUploader(endpoint: endpoint, headers: headers, chunkSize: partSize, transport: transport, logger: logger) }
        switch wire {
        case .tus: self = .tus(try tus())
        case .ietf, .auto:
            let draft = try DraftUploader(target: endpoint, version: version, headers: headers, chunkSize: partSize, transport: transport, logger: logger)
            self = .ietf(draft, fallback: wire == .auto ? try tus() : nil)
        }
    }

    /// The key a file goes to (S3), or the endpoint (tus): part of the upload's id.
    func target(for source: UploadSource) -> String {
        switch self {
        case let .s3(_, bucket, key): return "s3://\(bucket)/\(objectKey(for: source, key))"
        case let .tus(uploader): return uploader.endpoint.absoluteString
        case let .ietf(uploader, _): return uploader.target.absoluteString
        }
    }

    private func objectKey(for source: UploadSource, _ key: String) -> String {
        key.isEmpty || key.hasSuffix("/") ? key + source.url.lastPathComponent : key
    }

    /// Uploads one file; returns where it now is.
    func upload(_ source: UploadSource, journal: UploadJournal) async throws -> String {
        switch self {
        case let .s3(storage, bucket, prefixOrKey):
            let key = objectKey(for: source, prefixOrKey)
            try await storage.upload(fileAt: source.url, attachment: Attachment(id: journal.id, filename: key, state: .queuedUpload), journal: journal)
            return "s3://\(bucket)/\(key)"
        case let .tus(uploader):
            return try await uploader.upload(source.url, metadata: ["filename": source.url.lastPathComponent], journal: journal).absoluteString
        case let .ietf(uploader, nil):
            return try await uploader.upload(source.url, journal: journal).absoluteString
        case let .ietf(uploader, tus?):
            // Detection: an upload begun with tus stays tus; otherwise the draft's creation
            // tells whether the server speaks it, before any byte of the file goes.
            if try await journal.database.upload(id: journal.id)?.record.kind != .tus {
                do {
                    return try await uploader.uploadOrSayNotSpoken(source.url, journal: journal).absoluteString
                } catch let notSpoken as DraftUploader.NotSpoken {
                    uploader.logger.info("\(notSpoken.error.message); uploading with tus")
                }
            }
            return try await tus.upload(source.url, metadata: ["filename": source.url.lastPathComponent], journal: journal).absoluteString
        }
    }

    /// What the upload has not sent, as requests for upload tasks (`put --hand-off-at`).
    func handOffRemainder(_ source: UploadSource, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        switch self {
        case let .s3(storage, _, prefixOrKey):
            let attachment = Attachment(id: journal.id, filename: objectKey(for: source, prefixOrKey), state: .queuedUpload)
            return try await storage.handOffRemainder(of: source.url, attachment: attachment, journal: journal, folder: folder)
        case let .ietf(uploader, _):
            return try await uploader.handOffRemainder(of: source.url, journal: journal, folder: folder)
        case let .tus(uploader):
            return try await uploader.handOffRemainder(of: source.url, metadata: ["filename": source.url.lastPathComponent], journal: journal, folder: folder)
        }
    }

    func shutdown() async throws {
        switch self {
        case let .s3(storage, _, _): try await storage.shutdown()
        case let .tus(uploader): try await uploader.shutdown()
        case let .ietf(uploader, fallback):
            try await uploader.shutdown()
            try await fallback?.shutdown()
        }
    }
}

/// `put --json`: each file's outcome.
struct UploadsJSON: Encodable {
    var ok: Bool
    var uploads: [UploadJSON]
}

struct UploadJSON: Encodable {
    var file: String
    var ok: Bool
    var url: String?
    var bytes: Int64
    var code: String?
    var message: String?
}
