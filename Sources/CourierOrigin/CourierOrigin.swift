import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A real HTTP/1.1 server on loopback that serves a directory with correct `Range`,
/// `If-Range`, strong `ETag`, `Last-Modified` and `HEAD`, and misbehaves on request:
/// see ``Fault``.
///
/// ```swift
/// let origin = try await CourierOrigin.start(directory: dir)
/// var cut = Fault()
/// cut.dropAfterBytes = 1 << 20
/// origin.setFault(cut, for: "/big.bin")
/// let url = origin.url("/big.bin")
/// …
/// try await origin.stop()
/// ```
public final class CourierOrigin: Sendable {
    /// The served directory.
    public let directory: URL
    /// The port it listens on (127.0.0.1).
    public let port: Int
    let serverChannel: any Channel
    let group: MultiThreadedEventLoopGroup
    let state = NIOLockedValueBox(OriginState())
    let logger: Logger
    let acceptTask: NIOLockedValueBox<Task<Void, Never>?> = .init(nil)
    /// Whether PUT (store the body as the file) and DELETE are accepted.
    public let writable: Bool
    let scheme = NIOLockedValueBox("http")

    struct OriginState {
        var faults: [String: Fault] = [:]
        var counts: [String: Int] = [:]
        var log: [(serial: Int, request: OriginRequest)] = []
        var nextSerial = 0
        var etagGeneration = 0
        var requiredAuthorization: String?
        var defaultFault: Fault?
        var requiredToken: String?
        var stallsEnded = 0
        var watchers: [Int: RequestWatcher] = [:], nextWatcher = 0
    }

    private init(directory: URL, port: Int, serverChannel: any Channel, group: MultiThreadedEventLoopGroup, logger: Logger, writable: Bool) {
        self.writable = writable
        self.directory = directory
        self.port = port
        self.serverChannel = serverChannel
        self.group = group
        self.logger = logger
    }

    /// Starts serving `directory` on `host` (loopback by default); port 0 picks a free port.
    /// With `writable`, PUT stores a body as a file (atomically) and DELETE removes one.
    /// With `tls` (a PEM certificate chain and key), it serves HTTPS.
    public static func start(directory: URL, host: String = "127.0.0.1", port: Int = 0, writable: Bool = false,
                             tls: (certificatePEM: String, privateKeyPEM: String)? = nil,
                             logger: Logger = Logger(label: "courier.origin")) async throws -> CourierOrigin {
        let sslContext = try tls.map { tls in
            try NIOSSLContext(configuration: .makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificatePEM).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKeyPEM, format: .pem))))
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext)) }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    return try NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let origin = CourierOrigin(directory: directory.standardizedFileURL, port: server.channel.localAddress?.port ?? port,
                                   serverChannel: server.channel, group: group, logger: logger, writable: writable)
        origin.scheme.withLockedValue { $0 = tls == nil ? "http" : "https" }
        let task = Task<Void, Never> {
            _ = try? await server.executeThenClose { inbound in   // the listener ends when stopped; its error is the stop
                try await withThrowingDiscardingTaskGroup { tasks in
                    for try await connection in inbound {
                        tasks.addTask { await origin.serve(connection) }
                    }
                }
            }
        }
        origin.acceptTask.withLockedValue { $0 = task }
        return origin
    }

    /// Stops listening and closes every connection.
    public func stop() async throws {
        try? await serverChannel.close()   // stopping: already closed is fine
        let task = acceptTask.withLockedValue { $0 }
        task?.cancel()
        await task?.value
        defer { endWatches() }
        try await group.shutdownGracefully()
    }

    /// The URL of a path on this origin, such as `/big.bin`.
    public func url(_ path: String) -> String {
        "\(scheme.withLockedValue { $0 })://127.0.0.1:\(port)" + (path.hasPrefix("/") ? path : "/" + path)
    }

    /// Sets (or with `nil`, clears) the fault for a path, and resets its request count.
    public func setFault(_ fault: Fault?, for path: String) {
        state.withLockedValue {
            $0.faults[path] = fault
            $0.counts[path] = 0
        }
    }

    /// Sets the fault for every path that has none of its own (`nil` clears it).
    public func setDefaultFault(_ fault: Fault?) {
        state.withLockedValue { $0.defaultFault = fault }
    }

    /// Requires `X-Emby-Token: token` (Jellyfin's header) on every request; `nil` turns it off.
    public func requireToken(_ token: String?) {
        state.withLockedValue { $0.requiredToken = token }
    }

    /// Requires `Authorization: value` on every request (401 otherwise); `nil` turns it off.
    public func requireAuthorization(_ value: String?) {
        state.withLockedValue { $0.requiredAuthorization = value }
    }

    /// Every request answered so far, oldest first: logged when it arrives, updated as its body is sent.
    public var requests: [OriginRequest] { state.withLockedValue { $0.log.map(\.request) } }

    /// Forgets the request log.
    public func clearRequests() { changeLog { $0.log.removeAll() } }

    // MARK: Serving

    /// Answers one request; returns whether the connection stays open.
    func respond(to head: HTTPRequestHead, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws -> Bool {
        let (path, query) = Self.splitTarget(head.uri)
        let isHead = head.method == .HEAD
        var record = OriginRequest(method: head.method.rawValue, path: path, range: head.headers.first(name: "Range"),
                                   ifRange: head.headers.first(name: "If-Range"), acceptEncoding: head.headers.first(name: "Accept-Encoding"),
                                   authorization: head.headers.first(name: "Authorization"), status: 0, bodyBytesSent: 0)
        record.query = head.uri.firstIndex(of: "?").map { String(head.uri[head.uri.index(after: $0)...]) }
        record.ifNoneMatch = head.headers.first(name: "If-None-Match")
        record.ifModifiedSince = head.headers.first(name: "If-Modified-Since")
        record.userAgent = head.headers.first(name: "User-Agent")
        let (serial, stallGeneration): (Int, Int) = changeLog { s in
            s.nextSerial += 1
            s.log.append((s.nextSerial, record))
            return (s.nextSerial, s.stallsEnded)   // `endStalls()` from now on lets this reply go
        }
        defer { update(serial, record) }

        // Pick the fault: query parameters win over the per-path fault.
        let requiredToken = state.withLockedValue { $0.requiredToken }
        if let requiredToken, head.headers.first(name: "X-Emby-Token") != requiredToken {
            record.status = 401
            try await writeSimple(status: 401, outbound: outbound, keepAlive: head.isKeepAlive, isHead: isHead)
            return head.isKeepAlive
        }
        let (fault, requestNumber, generation, requiredAuth): (Fault, Int, Int, String?) = state.withLockedValue { s in
            s.counts[path, default: 0] += 1
            let queryFault = Fault(query: query)
            let fault = queryFault.isEmpty ? (s.faults[path] ?? s.defaultFault ?? Fault()) : queryFault
            if fault.changeETag { s.etagGeneration += 1 }
            return (fault, s.counts[path]!, s.etagGeneration, s.requiredAuthorization)
        }
        let range = head.headers.first(name: "Range")
        let laterRange = range != nil && range!.replacingOccurrences(of: " ", with: "") != "bytes=0-"
        let active = (fault.times == 0 || requestNumber <= fault.times) && (!fault.onlyRanges || laterRange)
        var f = active ? fault : Fault()
        f.bytesPerSecond = fault.bytesPerSecond   // throttling is the link's, not a fault: it outlives `times`
        let keepAlive = head.isKeepAlive
        if let wait = f.headerDelaySeconds { try await stallReply(for: wait, since: stallGeneration) }   // a stall before the head

        if let requiredAuth, head.headers.first(name: "Authorization") != requiredAuth {
            record.status = 401
            try await writeSimple(status: 401, outbound: outbound, keepAlive: keepAlive, isHead: isHead)
            return keepAlive
        }
        if let location = f.redirectTo {
            record.status = f.redirectStatus
            try await writeSimple(status: f.redirectStatus, extra: [("Location", location)], outbound: outbound, keepAlive: keepAlive, isHead: isHead)
            return keepAlive
        }
        if let status = f.failStatus, f.failCount == 0 || requestNumber <= f.failCount {
            record.status = status
            var extra: [(String, String)] = []
            if let ra = f.retryAfter { extra.append(("Retry-After", String(ra))) }
            try await writeSimple(status: status, extra: extra, outbound: outbound, keepAlive: keepAlive, isHead: isHead)
            return keepAlive
        }
        guard head.method == .GET || isHead else {
            record.status = 405
            try await writeSimple(status: 405, extra: [("Allow", "GET, HEAD")], outbound: outbound, keepAlive: keepAlive, isHead: isHead)
            return keepAlive
        }
        guard let file = resolve(path, query: query) else {
            record.status = 404
            try await writeSimple(status: 404, outbound: outbound, keepAlive: keepAlive, isHead: isHead)
            return keepAlive
        }

        if file.transcoded { f.ignoreRange = true }

        // Validators.
        let mtime = file.mtime + (f.changeETag ? Double(generation) : 0)
        let strong = Self.etag(size: file.size, mtime: mtime)
        let tagCore = String(strong.dropFirst().dropLast())
        let etag = f.noValidators ? nil : (f.weakETag ? "W/\(strong)" : f.unquotedETag ? tagCore : strong)
        let lastModified = f.noValidators ? nil : Self.httpDate(mtime)

        var headers: [(String, String)] = [("Accept-Ranges", f.ignoreRange ? "none" : "bytes")]
        if let etag { headers.append(("ETag", etag)) }
        if let lastModified { headers.append(("Last-Modified", lastModified)) }
        headers.append(("Content-Type", Self.contentType(file.url)))
        if let encoding = f.contentEncoding { headers.append(("Content-Encoding", encoding)) }
        if let name = f.contentDisposition {
            headers.append(("Content-Disposition", "attachment; filename=\"\(name.replacingOccurrences(of: "\"", with: "\\\""))\""))
        }

        // Conditional GET (RFC 9110 §13.2.2): If-None-Match, compared weakly, wins over
        // If-Modified-Since (an exact match of Last-Modified, as nginx does by default);
        // both come before Range.
        let notModified: Bool = {
            if let inm = head.headers.first(name: "If-None-Match") {
                guard let etag else { return false }
                let ours = etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag
                return inm.split(separator: ",").contains { tag in
                    let t = tag.trimmingCharacters(in: .whitespaces)
                    return t == "*" || (t.hasPrefix("W/") ? String(t.dropFirst(2)) : t) == ours
                }
            }
            if let ims = head.headers.first(name: "If-Modified-Since"), let lastModified { return ims == lastModified }
            return false
        }()
        if notModified {
            record.status = 304
            update(serial, record)
            try await writeHead(status: 304, headers: headers.filter { $0.0 == "ETag" || $0.0 == "Last-Modified" }, outbound: outbound, keepAlive: keepAlive)
            return keepAlive
        }

        // Range and If-Range.
        var status = 200
        var start: Int64 = 0
        var end: Int64 = file.size - 1
        if !f.ignoreRange, !f.gzip, let rawRange = head.headers.first(name: "Range"), let range = ByteRangeRequest(rawRange) {
            let ifRange = head.headers.first(name: "If-Range")
            let ifRangeHolds: Bool = {
                guard let ifRange, !f.ignoreIfRange else { return true }
                if ifRange.hasPrefix("\"") { return etag != nil && !(etag!.hasPrefix("W/")) && ifRange == etag }
                if ifRange.hasPrefix("W/") { return false }
                return lastModified != nil && ifRange == lastModified
            }()
            if ifRangeHolds {
                if let (s, e) = range.resolve(size: file.size) {
                    status = 206
                    start = s
                    end = e
                    if let align = f.alignRangeStart, align > 0 { start = (start / align) * align }
                    let total = f.contentRangeTotal.map(String.init) ?? String(file.size)
                    headers.append(("Content-Range", "bytes \(start + f.contentRangeShift)-\(end + f.contentRangeShift)/\(total)"))
                } else {
                    record.status = 416
                    try await writeSimple(status: 416, extra: [("Content-Range", "bytes */\(f.contentRangeTotal ?? file.size)")] + headers.filter { $0.0 != "Content-Type" },
                                          body: "416 Range Not Satisfiable: this page must never be appended to a file\n",
                                          outbound: outbound, keepAlive: keepAlive, isHead: isHead)
                    return keepAlive
                }
            }
        }

        // Body source: the file's bytes, or its gzip encoding.
        var gzipped: [UInt8]?
        if f.gzip {
            gzipped = Gzip.encode(try readAll(file.url))
            headers.append(("Content-Encoding", "gzip"))
            start = 0
            end = Int64(gzipped!.count) - 1
        }
        let bodyLength = max(0, end - start + 1)
        if !f.noContentLength { headers.append(("Content-Length", String(bodyLength + f.contentLengthDelta))) }
        record.status = status

        update(serial, record)
        try await writeHead(status: status, headers: headers, outbound: outbound, keepAlive: keepAlive)
        if isHead { return keepAlive }

        // Stream the body with faults.
        let handle = try FileHandle(forReadingFrom: file.url)
        defer { try? handle.close() }   // a read-only handle: nothing to lose on close
        if gzipped == nil { try handle.seek(toOffset: UInt64(start)) }
        let chunk: Int64 = 256 << 10
        var sent: Int64 = 0
        var stalled = false
        let startedAt = ContinuousClock.now
        while sent < bodyLength {
            var n = min(chunk, bodyLength - sent)
            if let drop = f.dropAfterBytes { n = min(n, max(0, drop - sent)) }
            if let stall = f.stallAfterBytes, !stalled { n = min(n, max(0, stall - sent)) }
            if let rate = f.bytesPerSecond, rate > 0 { n = min(n, max(1, rate / 20)) }
            if n > 0 {
                let bytes: [UInt8]
                if let gzipped {
                    bytes = Array(gzipped[Int(sent)..<Int(sent + n)])
                } else {
                    guard let data = try handle.read(upToCount: Int(n)), !data.isEmpty else { break }
                    bytes = Array(data)
                }
                try await outbound.write(ByteBuffer(bytes: bytes))
                sent += Int64(bytes.count)
                record.bodyBytesSent = sent
                update(serial, record)
            }
            if let drop = f.dropAfterBytes, sent >= drop {
                // Let the written bytes drain before the connection goes, as on a real link
                // that fails later: closing at once would discard NIO's pending writes.
                try? await Task.sleep(for: .milliseconds(50))   // a fault's stall; cancellation ends it early
                return false
            }
            if let stall = f.stallAfterBytes, !stalled, sent >= stall {
                stalled = true
                try await stallReply(for: f.stallSeconds, since: stallGeneration)
            }
            if let rate = f.bytesPerSecond, rate > 0 {
                let due = startedAt + .milliseconds(Int64(Double(sent) / Double(rate) * 1000))
                if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
            }
        }
        // A lying Content-Length leaves the connection unusable: close it.
        if f.contentLengthDelta != 0 { return false }
        // A body of unannounced length ends only when the connection closes.
        if f.noContentLength { return false }
        return keepAlive
    }

    func update(_ serial: Int, _ request: OriginRequest) {
        changeLog { s in
            if let i = s.log.lastIndex(where: { $0.serial == serial }) { s.log[i].request = request }
        }
    }
}
