import ArgumentParser
import Courier
import CourierAttachments
import Crypto
import Foundation

struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload a file to S3 or a tus server; run it again after an interruption and it resumes.",
        discussion: """
        s3://bucket/key?endpoint=…&region=… is an S3 multipart upload (credentials from \
        AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); a key ending in / gets the file's name. \
        http(s)://… is a tus 1.0 creation URL. The upload's state (the S3 upload id and each \
        part the server confirmed, or the tus upload URL and offset) is kept in the database, so \
        after Ctrl-C, a kill or a lost connection the same command sends only what the server \
        does not hold. A file changed since the upload began is uploaded again from the start, \
        never completed as a mix of two versions.
        """)

    @Argument(help: "The file to upload.")
    var file: String

    @Argument(help: "s3://bucket/key or a tus creation URL (http or https).")
    var url: String

    @Option(name: .long, help: "S3 part size or tus chunk size (5M to 5G for S3): what an interruption can cost at most.")
    var partSize: ByteSize = ByteSize(bytes: 8 << 20)

    @Option(name: [.customShort("x"), .customLong("connections")], help: "S3 parts sent at once (1-16).")
    var connections: Int = 4

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header to send to a tus server, \"Name: value\" (repeatable); never stored.")
    var headers: [String] = []

    @Option(name: .long, help: "The name the tus server is told (Upload-Metadata filename; default: the file's name).")
    var name: String?

    @Flag(name: .shortAndLong, help: "No progress output.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log what the upload does.")
    var verbose = false

    @OptionGroup var store: StoreOptions

    func validate() throws {
        if !(1...16).contains(connections) { throw ValidationError("--connections takes 1 to 16.") }
        if partSize.bytes < 1 { throw ValidationError("--part-size must be at least one byte.") }
        _ = try Get.parseHeaders(headers)
    }

    func run() async throws {
        Interrupts.shared.install()   // Ctrl-C stops the upload; the same command resumes it
        do {
            let source = try UploadSource(url: URL(fileURLWithPath: file))
            let id = "put:" + SHA256.hash(data: Data("\(source.url.path)\n\(url)".utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
            let database = try store.open()
            let label = source.url.lastPathComponent
            let bars = UploadBars()
            let quiet = self.quiet
            if !quiet, let kept = try await database.upload(id: id), kept.record.confirmedBytes > 0 {
                Terminal.error("Resuming \(label): the server confirmed \(Format.bytes(kept.record.confirmedBytes)) before.")
            }
            let show: @Sendable (UploadProgress) -> Void = { progress in bars.show(label, progress) }
            let report = quiet ? nil : show
            let journal = UploadJournal(database: database, id: id, progress: report)
            let upload = Task { try await send(source, journal: journal) }
            Interrupts.shared.onInterrupt { upload.cancel() }
            let result = await upload.result
            bars.finish()
            if Interrupts.shared.isSet {
                Terminal.error("courier: interrupted; run the same command to resume (the server keeps what it confirmed)")
                throw ExitCode(ExitCodes.interrupted)
            }
            let location = try result.get()
            if !quiet { Terminal.error("Uploaded \(label) (\(Format.bytes(source.size))).") }
            Terminal.out(location)
        } catch let error as CourierError { throw failure(error) }
    }

    /// Sends the file; returns where it now is.
    private func send(_ source: UploadSource, journal: UploadJournal) async throws -> String {
        let logger = makeLogger(verbose: verbose)
        if url.hasPrefix("s3://") {
            guard var c = URLComponents(string: url) else { throw CourierError(.invalidURL, "not an S3 URL: \(url)") }
            var key = String(c.path.drop(while: { $0 == "/" }))
            if key.isEmpty || key.hasSuffix("/") { key += source.url.lastPathComponent }
            c.path = ""
            var configuration = try S3Configuration(url: c.string ?? url)
            configuration.prefix = ""
            configuration.partSize = max(5 << 20, partSize.bytes)
            configuration.multipartThreshold = configuration.partSize
            configuration.uploadConcurrency = connections
            let s3 = S3RemoteStorage(configuration: configuration, logger: logger)
            let sent = await outcome { try await s3.upload(fileAt: source.url, attachment: Attachment(id: journal.id, filename: key, state: .queuedUpload), journal: journal) }
            try? await s3.shutdown()   // the upload's own outcome is what counts; the process ends next
            try sent.get()
            return "s3://\(configuration.bucket)/\(key)"
        }
        guard let endpoint = URL(string: url), ["http", "https"].contains(endpoint.scheme?.lowercased() ?? "") else {
            throw CourierError(.invalidURL, "courier put sends to s3://bucket/key or to a tus creation URL (http or https): \(url)")
        }
        let tus = try TusUploader(endpoint: endpoint, headers: try Get.parseHeaders(headers), chunkSize: partSize.bytes, logger: logger)
        let sent = await outcome { try await tus.upload(source.url, metadata: ["filename": name ?? source.url.lastPathComponent], journal: journal) }
        try? await tus.shutdown()   // the upload's own outcome is what counts; the process ends next
        return try sent.get().absoluteString
    }
}

/// What an async call ended with, so cleanup can run before the error leaves.
private func outcome<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
