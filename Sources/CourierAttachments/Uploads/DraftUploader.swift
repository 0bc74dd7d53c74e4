import Courier
import Foundation
import Logging

/// A client of the IETF draft "Resumable Uploads for HTTP" (draft-ietf-httpbis-resumable-upload,
/// the successor of tus, which Apple's URLSession speaks since iOS 17): a creation with no
/// body, appends of ``chunkSize`` bytes from the server's offset, the last one marked
/// complete, and an offset request (`HEAD`) after a cut. The upload's URL and the offset
/// the server confirmed live in the journal's record, so a kill or a relaunch asks the
/// server where it is and sends only the rest (`ResumableUploadDraft` holds the fields).
public final class DraftUploader: Sendable {
    /// Where the upload is created (`POST`); the server says where it then lives.
    public let target: URL
    /// Bytes per append (default 8 MiB): how often the record learns the server's offset.
    public let chunkSize: Int64
    /// Failed requests in a row without net progress before the upload gives up (default 6).
    public let maxAttempts: Int
    /// The interop version every request of Courier's own says (`Upload-Draft-Interop-Version`).
    package let version: ResumableUploadDraft.Version
    /// The system's own resumable upload, when it has one (URLSession on Apple platforms
    /// since iOS 17): it carries the protocol, Courier keeps the record (DraftUploader+System).
    let system: (any SystemResumableUploading)?
    let headers: [(name: String, value: String)]
    let service: ServiceTransport
    package let logger: Logger

    /// Makes a client. Where the system speaks the draft itself (`systemUploads`: by default
    /// URLSession on iOS 17, macOS 14 and later; none elsewhere), the system carries each
    /// upload with the interop version of the OS, and Courier keeps the record on top;
    /// elsewhere Courier speaks interop version 6 (what iOS 18.1 on speaks) over `transport`.
    /// `headers` (auth) go with every request to the target's origin and are never persisted.
    /// - Parameters:
    ///   - target: the creation URL.
    ///   - headers: sent to the target's origin only.
    ///   - chunkSize: bytes per append.
    ///   - maxAttempts: failed requests in a row without net progress before the upload gives up.
    ///   - transport: the app's HTTP stack (its `Downloader`'s `transport`); `nil`: the
    ///     platform's default, shut down by ``shutdown()``.
    ///   - systemUploads: the system's own resumable upload (its own session: `transport`'s
    ///     settings do not reach it, nor the journal's rate limit); `nil`: Courier's requests only.
    ///   - logger: where the client logs.
    public convenience init(target: URL, headers: [(name: String, value: String)] = [], chunkSize: Int64 = 8 << 20, maxAttempts: Int = 6,
                            transport: (any HTTPTransport)? = nil, systemUploads: (any SystemResumableUploading)? = PlatformResumableUploads.make(),
                            logger: Logger = Logger(label: "courier.ietf")) throws {
        let version = systemUploads.flatMap { ResumableUploadDraft.Version(rawValue: $0.interopVersion) } ?? .v6
        try self.init(target: target, version: version, headers: headers, chunkSize: chunkSize, maxAttempts: maxAttempts, transport: transport,
                      system: systemUploads, logger: logger)
    }

    /// Makes a client speaking `version` (and, with `system`, letting it carry each upload).
    package init(target: URL, version: ResumableUploadDraft.Version, headers: [(name: String, value: String)] = [], chunkSize: Int64 = 8 << 20,
                 maxAttempts: Int = 6, transport: (any HTTPTransport)? = nil, system: (any SystemResumableUploading)? = nil,
                 logger: Logger = Logger(label: "courier.ietf")) throws {
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", target.host != nil else {
            throw CourierError(.invalidURL, "a resumable upload goes to an http(s) URL: \(target.absoluteString.prefix(200))")
        }
        self.target = target
        self.version = version
        self.system = system
        self.headers = headers
        self.chunkSize = max(1, chunkSize)
        self.maxAttempts = max(1, maxAttempts)
        self.logger = logger
        _ = try HTTPFields(validating: headers)
        service = ServiceTransport(transport)
    }

    /// Releases the transport when the client made it, awaited.
    public func shutdown() async throws { try await service.shutdown() }

    /// The server answered a creation without the draft's fields: it does not speak it
    /// (a caller with a fallback, such as `courier put --protocol auto`, uses that instead).
    package struct NotSpoken: Error { package let error: CourierError }

    /// Uploads `file`, going on with the journal's upload when it is the same file going to
    /// the same target and the server still has it. Returns the upload's URL; the record is
    /// deleted once the server holds the whole file. An upload the server lost, or a file
    /// that changed while it went up, starts again once (`E_REMOTE_NOT_FOUND` or
    /// `E_SOURCE_CHANGED` the second time). A server that does not speak the draft is
    /// `E_PROTOCOL`, before any byte of the file is sent; through the system's own upload,
    /// it gets the file as a plain upload, as URLSession sends it.
    public func upload(_ file: URL, journal: UploadJournal) async throws -> URL {
        do { return try await uploadOrSayNotSpoken(file, journal: journal) } catch let notSpoken as NotSpoken { throw notSpoken.error }
    }

    /// ``upload(_:journal:)``, with a server that does not speak the draft told apart.
    package func uploadOrSayNotSpoken(_ file: URL, journal: UploadJournal) async throws -> URL {
        do {
            return try await UploadRestart.atMostOnce(file, journal: journal, server: "the server", logger: logger, cancel: cancel) { source in
                if let system, let url = try await upload(source, through: system, journal: journal) { return url }
                return try await run(source, journal: journal)
            }
        } catch let notSpoken as NotSpoken {
            try await journal.database.deleteUpload(id: journal.id)   // the record of an upload that never existed
            throw notSpoken
        }
    }

    /// Starts (or starts again) the journal's record of an upload of `source` to the target,
    /// with no handle yet.
    func beginRecord(of source: UploadSource, _ journal: UploadJournal) async throws {
        try await journal.database.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size,
                                                            sourceModified: source.modified, kind: .ietf, target: target.absoluteString, partSize: chunkSize))
    }

    private func run(_ source: UploadSource, journal: UploadJournal) async throws -> URL {
        let db = journal.database
        let existing = try await db.upload(id: journal.id)
        var uploadURL: URL?
        var offset: Int64 = 0
        switch UploadResume.decide(record: existing?.record, source: source, kind: .ietf, target: target.absoluteString, partSize: chunkSize) {
        case .resume(let remote):
            let url = URL(string: remote)
            if let url, let changed = try TusUploader.changedChunk(existing?.parts ?? [], source) {
                logger.notice("\(source.url.lastPathComponent) changed (bytes at \(changed)); starting again")
                await cancel(url)
            } else if let url, source.size > 0, existing?.record.confirmedBytes == source.size {
                try source.checkUnchanged()   // the last append's reply was recorded: the upload is whole
                try await db.deleteUpload(id: journal.id)
                return url
            } else if let url, let held = try await serverOffset(url, size: source.size) {
                if held.complete, held.offset == source.size {
                    try source.checkUnchanged()
                    try await db.deleteUpload(id: journal.id)
                    return url
                } else if held.complete {
                    logger.notice("\(source.url.lastPathComponent): the server closed the upload at \(held.offset) bytes; starting again")
                } else {
                    uploadURL = url
                    offset = held.offset
                }
            }
        case let .restart(reason, abandon):
            if let abandon, let url = URL(string: abandon) {
                logger.notice("\(source.url.lastPathComponent): \(reason); starting again")
                await cancel(url)
            }
        }
        var number = (existing?.parts.map(\.number).max() ?? 0) + 1
        if uploadURL == nil {
            try await beginRecord(of: source, journal)
            let url = try await create()
            try await db.noteUploadHandle(id: journal.id, remoteId: url.absoluteString)
            uploadURL = url
            offset = 0
            number = 1
        }
        let url = uploadURL!
        let counter = UploadCounter(journal: journal, total: source.size, held: offset)
        var failures = 0
        var best = offset   // net progress: past the most the server ever held
        var sentLast = false
        while !sentLast {
            let length = min(chunkSize, source.size - offset)
            // The last append completes the file: it goes from memory, read before the file is
            // looked at again, so a rewrite during the send cannot complete a mix.
            let last = offset + length == source.size
            let chunk = try last ? source.read(offset: offset, length: length) : source.hash(offset: offset, length: length)
            if last { try source.checkUnchanged() }
            let tally = RequestTally(counter)
            var serverSaid: (offset: Int64, complete: Bool)?
            do {
                switch try await append(url, chunk, last: last, tally: tally) {
                case .confirmed(let confirmed):
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
                    sentLast = last && confirmed == source.size
                    // Only net progress starts the count again, so a server that never moves,
                    // or moves back, cannot hold the upload in a loop.
                    if confirmed > best || sentLast {
                        best = max(best, confirmed)
                        failures = 0
                        continue
                    }
                case let .conflict(held, complete):
                    tally.takeBack()
                    serverSaid = held.map { ($0, complete) }
                case .retry:
                    tally.takeBack()
                }
            } catch let error as CourierError where error.isPassing {
                tally.takeBack()
                logger.info("\(source.url.lastPathComponent): \(error); asking the server where it is")
            }
            failures += 1
            if failures >= maxAttempts {
                throw CourierError(.network, "the upload of \(source.url.lastPathComponent) failed \(failures) times in a row at byte \(offset)")
            }
            let held = try await recover(url, source: source, from: offset, serverSaid: serverSaid, failures: &failures, counter: counter)
            if held.complete {
                // The server holds a finished upload: whole when it holds every byte (a last
                // append whose reply was lost), else closed short, and a new one is needed.
                guard held.offset == source.size else { throw UploadRestart.gone }
                try source.checkUnchanged()
                sentLast = true
            }
            if held.offset > best {
                best = held.offset
                failures = 0
            }
            offset = held.offset
        }
        try await db.deleteUpload(id: journal.id)
        return url
    }

    /// After a failed append: where the server is and whether it holds the upload as
    /// finished, asked (after a backoff) until it can say, within the same budget. A 409
    /// that named the server's offset is taken as said (a question on the connection that
    /// carried it may go unanswered).
    private func recover(_ url: URL, source: UploadSource, from offset: Int64, serverSaid: (offset: Int64, complete: Bool)?, failures: inout Int,
                         counter: UploadCounter) async throws -> (offset: Int64, complete: Bool) {
        if let serverSaid, serverSaid.offset <= source.size {
            if serverSaid.offset > offset { counter.confirmed(serverSaid.offset - offset) }
            return serverSaid
        }
        while true {
            try await Task.sleep(for: .milliseconds(100 << min(failures, 6)))
            do {
                guard let held = try await serverOffset(url, size: source.size) else { throw UploadRestart.gone }
                if held.offset > offset { counter.confirmed(held.offset - offset) }
                return held
            } catch let error as CourierError where error.isPassing {
                logger.info("\(source.url.lastPathComponent): \(error) asking for the offset")
                failures += 1
                if failures >= maxAttempts {
                    throw CourierError(.network, "the upload of \(source.url.lastPathComponent) failed \(failures) times in a row at byte \(offset)")
                }
            }
        }
    }
}
