import Courier
import Foundation
import Logging

/// A tus 1.0 client (<https://tus.io/protocols/resumable-upload>): creation, `HEAD` for the
/// offset, `PATCH` from it, and the checksum (`sha1`) and termination extensions when the
/// server offers them. The upload URL and the offset the server confirmed live in the
/// journal's record, so a relaunch asks the server where it is and sends only the rest.
public final class TusUploader: Sendable {
    /// The creation URL (`POST` here makes an upload).
    public let endpoint: URL
    /// Bytes per `PATCH` (default 8 MiB): what a kill can cost at most.
    public let chunkSize: Int64
    /// Failed requests in a row before the upload gives up (default 6).
    public let maxAttempts: Int
    private let headers: [(name: String, value: String)]
    private let service: ServiceTransport
    let logger: Logger

    /// Makes a client; `headers` (auth) go with every request and are never persisted.
    /// - Parameters:
    ///   - endpoint: the creation URL.
    ///   - headers: sent to the endpoint's origin only.
    ///   - chunkSize: bytes per `PATCH`.
    ///   - maxAttempts: failed requests in a row before the upload gives up.
    ///   - transport: the app's HTTP stack (its `Downloader`'s `transport`); `nil`: the
    ///     platform's default, shut down by ``shutdown()``.
    ///   - logger: where the client logs.
    public init(endpoint: URL, headers: [(name: String, value: String)] = [], chunkSize: Int64 = 8 << 20, maxAttempts: Int = 6,
                transport: (any HTTPTransport)? = nil, logger: Logger = Logger(label: "courier.tus")) throws {
        guard let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https", endpoint.host != nil else {
            throw CourierError(.invalidURL, "a tus endpoint is an http(s) URL: \(endpoint.absoluteString.prefix(200))")
        }
        self.endpoint = endpoint
        self.headers = headers
        self.chunkSize = max(1, chunkSize)
        self.maxAttempts = max(1, maxAttempts)
        self.logger = logger
        _ = try HTTPFields(validating: headers)
        service = ServiceTransport(transport)
    }

    /// Releases the transport when the client made it, awaited.
    public func shutdown() async throws { try await service.shutdown() }

    /// Uploads `file`, going on with the journal's upload when it is the same file going to
    /// the same endpoint and the server still has it. Returns the upload URL; the record is
    /// deleted once the server holds the whole file. An upload the server lost, or a file
    /// that changed while it went up, starts again once (`E_REMOTE_NOT_FOUND` or
    /// `E_SOURCE_CHANGED` the second time).
    public func upload(_ file: URL, metadata: [String: String], journal: UploadJournal) async throws -> URL {
        try await UploadRestart.atMostOnce(file, journal: journal, server: "the tus server", logger: logger, cancel: terminate) { source in
            try await run(source, metadata: metadata, journal: journal)
        }
    }


    private func run(_ source: UploadSource, metadata: [String: String], journal: UploadJournal) async throws -> URL {
        let db = journal.database
        let existing = try await db.upload(id: journal.id)
        var uploadURL: URL?
        var offset: Int64 = 0
        switch UploadResume.decide(record: existing?.record, source: source, kind: .tus, target: endpoint.absoluteString, partSize: chunkSize) {
        case .resume(let remote):
            let url = URL(string: remote)
            if let url, let changed = try Self.changedChunk(existing?.parts ?? [], source) {
                logger.notice("\(source.url.lastPathComponent) changed (bytes at \(changed)); starting again")
                await terminate(url)
            } else if let url, source.size > 0, existing?.record.confirmedBytes == source.size {
                // The server confirmed the last byte (a handed-off PATCH's reply): the upload is
                // whole. Not asked again: a server may forget a finished upload (aiohttp-tus
                // answers its HEAD with 404), which would read as lost.
                try source.checkUnchanged()
                try await db.deleteUpload(id: journal.id)
                return url
            } else if let url, let held = try await serverOffset(url, size: source.size) {
                uploadURL = url
                offset = held
            }
        case let .restart(reason, abandon):
            if let abandon, let url = URL(string: abandon) {
                logger.notice("\(source.url.lastPathComponent): \(reason); starting again")
                await terminate(url)
            }
        }
        var number = (existing?.parts.map(\.number).max() ?? 0) + 1
        if uploadURL == nil {
            try await db.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size, sourceModified: source.modified,
                                                  kind: .tus, target: endpoint.absoluteString, partSize: chunkSize))
            let url = try await create(size: source.size, metadata: metadata)
            try await db.noteUploadHandle(id: journal.id, remoteId: url.absoluteString)
            uploadURL = url
            offset = 0
            number = 1
        }
        let url = uploadURL!
        let checksum = offset < source.size || source.size == 0 ? try await offersSHA1() : false
        let counter = UploadCounter(journal: journal, total: source.size, held: offset)
        var failures = 0
        var sentEmpty = false
        // An empty file still needs its one (empty) PATCH; a resumed upload the server holds
        // whole needs none.
        while offset < source.size || (source.size == 0 && !sentEmpty) {
            let length = min(chunkSize, source.size - offset)
            // The last PATCH completes the file: from a server that checks no checksum, it goes
            // from memory, read before the file is looked at again, so a rewrite during the
            // send cannot complete a mix. Every other chunk streams from the file.
            let last = offset + length == source.size
            let chunk = try last && !checksum ? source.read(offset: offset, length: length) : source.hash(offset: offset, length: length, sha1: checksum)
            if last { try source.checkUnchanged() }
            let tally = RequestTally(counter)
            do {
                switch try await patch(url, chunk, tally: tally) {
                case .confirmed(let confirmed):
                    sentEmpty = true
                    let kept = confirmed - offset == chunk.length ? chunk : try source.hash(offset: offset, length: confirmed - offset)
                    if kept.length < chunk.length { counter.lost(chunk.length - kept.length) }
                    try source.checkUnchanged()
                    if kept.length > 0 {
                        try await db.noteUploadPart(UploadPart(uploadId: journal.id, number: number, offset: offset, size: kept.length, etag: nil,
                                                               md5: kept.md5Hex, sha256: kept.sha256Hex), confirmedBytes: confirmed)
                        number += 1
                    }
                    counter.confirmed(kept.length)
                    offset = confirmed
                    // A reply that kept nothing of a chunk counts as a failure, so a server
                    // that never moves cannot hold the upload in a loop.
                    if kept.length > 0 || chunk.length == 0 {
                        failures = 0
                        continue
                    }
                case .resend:
                    tally.takeBack()
                    try source.checkUnchanged()   // a chunk that arrived other than its checksum: the file written while it went?
                case .askOffset, .retry:
                    tally.takeBack()
                case .recreate:
                    throw UploadRestart.gone
                case .fail(let status):
                    throw CourierError(status == 403 || status == 401 ? .accessDenied : .remoteStorage,
                                       "the tus server refused the upload of \(source.url.lastPathComponent): HTTP \(status)", httpStatus: status)
                }
            } catch let error as CourierError where error.isPassing {
                tally.takeBack()
                logger.info("\(source.url.lastPathComponent): \(error); asking the server where it is")
            }
            // Ask where the server is, trying again (within the same budget) while it cannot say.
            while true {
                failures += 1
                if failures >= maxAttempts {
                    throw CourierError(.network, "the upload of \(source.url.lastPathComponent) failed \(failures) times in a row at byte \(offset)")
                }
                try await Task.sleep(for: .milliseconds(100 << min(failures, 6)))
                do {
                    guard let held = try await serverOffset(url, size: source.size) else { throw UploadRestart.gone }
                    if held > offset { counter.confirmed(held - offset) }
                    offset = held
                    break
                } catch let error as CourierError where error.isPassing {
                    logger.info("\(source.url.lastPathComponent): \(error) asking for the offset")
                }
            }
        }
        try await db.deleteUpload(id: journal.id)
        return url
    }

    /// The first recorded chunk whose bytes in the file no longer hash the same, if any.
    static func changedChunk(_ parts: [UploadPart], _ source: UploadSource) throws -> Int64? {
        for part in parts where part.offset + part.size <= source.size {
            if try source.hash(offset: part.offset, length: part.size).sha256Hex != part.sha256 { return part.offset }
        }
        return parts.contains { $0.offset + $0.size > source.size } ? source.size : nil
    }

    /// A request; the caller's headers (auth) go only to the endpoint's own origin, never to
    /// an upload URL a server's `Location` put elsewhere.
    /// Sends a request (tus redirects are not followed).
    private func send(_ method: HTTPRequest.Method, _ url: URL, _ extra: [(name: String, value: String)] = [],
                      body: TransportRequestBody? = nil, observer: (any RequestBodyObserver)? = nil, timeout: Duration) async throws -> TransportResponse {
        var request = try TransportRequest(url: url.absoluteString, method: method,
                                           headers: requestHeaders(for: url) + [("Tus-Resumable", TusHeaders.version), ("Accept-Encoding", "identity")] + extra,
                                           body: body, timeout: timeout)
        request.bodyObserver = observer
        return try await service.transport.send(request)
    }

    /// The caller's headers (auth) for a request to `url`: only to the endpoint's own origin.
    func requestHeaders(for url: URL) -> [(name: String, value: String)] { url.origin == endpoint.origin ? headers : [] }

    /// Whether the server checks a chunk's SHA-1 (`OPTIONS`: the checksum extension).
    private func offersSHA1() async throws -> Bool {
        guard let response = try? await send(.options, endpoint, timeout: .seconds(30)) else { return false }   // OPTIONS is optional in tus: no answer means no extensions
        _ = try? await HTTPCalls.text(response)   // the body is not needed; a failed read changes nothing
        return TusHeaders.extensions(response.headerFields.first(name: "Tus-Extension")).contains("checksum")
            && TusHeaders.checksumAlgorithms(response.headerFields.first(name: "Tus-Checksum-Algorithm")).contains("sha1")
    }

    func create(size: Int64, metadata: [String: String]) async throws -> URL {
        let encoded = TusHeaders.metadata(metadata)
        let response = try await send(.post, endpoint, [("Upload-Length", String(size))] + (encoded.isEmpty ? [] : [("Upload-Metadata", encoded)]),
                                      body: .bytes(Data()), timeout: .seconds(60))
        let text = try await HTTPCalls.text(response)
        guard response.status == 201 else { throw HTTPCalls.failure("creating a tus upload at \(endpoint.absoluteString)", response, text) }
        return try TusHeaders.location(response.headerFields.first(name: "Location"), relativeTo: endpoint)
    }

    /// The server's offset for the upload (`HEAD`); `nil` when the upload is gone or is
    /// not this file's (another length).
    func serverOffset(_ url: URL, size: Int64) async throws -> Int64? {
        let response = try await send(.head, url, timeout: .seconds(60))
        if [404, 410, 403].contains(response.status) { return nil }
        // Locked: a request of the killed run still holds the upload on the server (tusd).
        if response.status == 423 { throw CourierError(.network, "the tus server still holds the upload locked (423)", httpStatus: 423) }
        guard (200..<300).contains(response.status) else { throw HTTPCalls.failure("asking the tus server for the offset", response, "") }
        let offset = try TusHeaders.offset(response.headerFields.first(name: "Upload-Offset"))
        if let length = try TusHeaders.length(response.headerFields.first(name: "Upload-Length")), length != size { return nil }
        guard offset <= size else { throw CourierError(.protocolViolation, "the tus server holds \(offset) bytes of a \(size)-byte file") }
        return offset
    }

    private func patch(_ url: URL, _ chunk: UploadChunk, tally: RequestTally) async throws -> TusPatchOutcome {
        let response = try await send(.patch, url, [("Upload-Offset", String(chunk.offset)), ("Content-Type", "application/offset+octet-stream")]
                                          + (chunk.sha1.map { [("Upload-Checksum", "sha1 \($0.base64EncodedString())")] } ?? []),
                                      body: chunk.body, observer: tally, timeout: .seconds(300))
        _ = try await HTTPCalls.text(response)
        return try TusPatchOutcome.judge(status: response.status, offsetHeader: response.headerFields.first(name: "Upload-Offset"),
                                         sentFrom: chunk.offset, length: chunk.length)
    }

    /// Termination (`DELETE`): the server may drop the bytes. A failure is logged only.
    func terminate(_ url: URL) async {
        do {
            let response = try await send(.delete, url, timeout: .seconds(30))
            _ = try await HTTPCalls.text(response)
        } catch {
            logger.info("terminating \(url.absoluteString): \(error)")
        }
    }
}
