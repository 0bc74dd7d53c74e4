import Foundation
import NIOCore
import NIOHTTP1

/// The origin's plumbing: one connection's request loop, uploads, path resolution, and
/// the helpers that write heads and short replies.
extension CourierOrigin {
    func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>) async {
        try? await connection.executeThenClose { inbound, outbound in   // a client that drops its connection is no error of the origin's
            var head: HTTPRequestHead?
            var upload: UploadSink?
            for try await part in inbound {
                switch part {
                case let .head(h):
                    head = h
                    upload = nil
                    if h.method == .PUT, writable { upload = try? UploadSink(directory: directory) }   // no sink: the upload is answered 500 below
                case var .body(buffer):
                    try upload?.write(&buffer)
                case .end:
                    guard let h = head else { return }
                    head = nil
                    let keepAlive: Bool
                    if h.method == .PUT || h.method == .DELETE {
                        keepAlive = try await respondToWrite(h, upload: upload, outbound: outbound)
                    } else {
                        keepAlive = try await respond(to: h, outbound: outbound)
                    }
                    upload?.discard()
                    upload = nil
                    if !keepAlive { return }
                }
            }
        }
    }

    /// PUT stores the body at the path (atomically: temp file, then rename), honouring
    /// `If-Match` and `If-None-Match: *` (412 when they fail) and answering the new `ETag`;
    /// DELETE removes the file (404 when it is not there). Only when the origin is writable.
    func respondToWrite(_ head: HTTPRequestHead, upload: UploadSink?, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws -> Bool {
        let (path, query) = Self.splitTarget(head.uri)
        let keepAlive = head.isKeepAlive
        var record = OriginRequest(method: head.method.rawValue, path: path, range: nil, ifRange: nil, acceptEncoding: nil,
                                   authorization: head.headers.first(name: "Authorization"), status: 0, bodyBytesSent: 0)
        defer { let r = record; changeLog { s in s.nextSerial += 1; s.log.append((s.nextSerial, r)) } }
        let (fault, count, requiredAuth): (Fault, Int, String?) = state.withLockedValue { s in
            s.counts[path, default: 0] += 1
            let q = Fault(query: query)
            return (q.isEmpty ? (s.faults[path] ?? Fault()) : q, s.counts[path]!, s.requiredAuthorization)
        }
        func answer(_ status: Int, _ extra: [(String, String)] = []) async throws -> Bool {
            record.status = status
            try await writeSimple(status: status, extra: extra, outbound: outbound, keepAlive: keepAlive, isHead: false)
            return keepAlive
        }
        guard writable else { return try await answer(405) }
        if let requiredAuth, head.headers.first(name: "Authorization") != requiredAuth { return try await answer(401) }
        if let status = fault.failStatus, fault.failCount == 0 || count <= fault.failCount { return try await answer(status) }
        guard let decoded = path.removingPercentEncoding, !decoded.contains("\0") else { return try await answer(400) }
        let parts = decoded.split(separator: "/").filter { $0 != "." }
        guard !parts.isEmpty, !parts.contains("..") else { return try await answer(400) }
        let target = parts.reduce(directory) { $0.appendingPathComponent(String($1)) }
        if head.method == .DELETE {
            guard FileManager.default.fileExists(atPath: target.path) else { return try await answer(404) }
            try? FileManager.default.removeItem(at: target)   // deleting what may not exist: DELETE is idempotent
            return try await answer(204)
        }
        guard let upload else { return try await answer(500) }
        let current = resolve(path).map { Self.etag(size: $0.size, mtime: $0.mtime) }
        if let ifMatch = head.headers.first(name: "If-Match"), ifMatch != "*" ? ifMatch != current : current == nil { return try await answer(412) }
        if head.headers.first(name: "If-None-Match") == "*", current != nil { return try await answer(412) }
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try upload.commit(to: target)
        return try await answer(201, resolve(path).map { [("ETag", Self.etag(size: $0.size, mtime: $0.mtime))] } ?? [])
    }

    /// Jellyfin-shaped routes, served from `jellyfin/` in the directory when it exists:
    /// - `/Items/{id}` → `items/{id}.json` (the whole `BaseItemDto`, as a server sends it);
    /// - `/Items/{id}/Download` → `media/{id}`, else the first `media/{id}.*` (its extension
    ///   gives the Content-Type: an `.html` file is an error page served with 200);
    /// - the same with `Static=false` (a transcoding) → `transcoded/{id}.{Container}`, else
    ///   `transcoded/{id}`, served without ranges, as a live transcode is;
    /// - `/Videos/{id}/{source}/Subtitles/{index}/Stream.{format}` → `subtitles/{source}-{index}.{format}`;
    /// - `/Items/{id}/Images/{Kind}` → `images/{id}-{Kind}.jpg`.
    func jellyfinRoute(_ decoded: String, query: [String: String]) -> (path: String, transcoded: Bool)? {
        let parts = decoded.split(separator: "/").map(String.init)
        if parts.count == 6, parts[0] == "Videos", parts[3] == "Subtitles", parts[5].hasPrefix("Stream.") {
            return ("jellyfin/subtitles/\(parts[2])-\(parts[4]).\(parts[5].dropFirst("Stream.".count))", false)
        }
        guard parts.count >= 2, parts[0] == "Items" else { return nil }
        let id = parts[1]
        if parts.count == 2 { return ("jellyfin/items/\(id).json", false) }
        if parts.count == 3, parts[2] == "Download" {
            let transcoded = query["Static"]?.lowercased() == "false"
            let folder = transcoded ? "transcoded" : "media"
            let preferred = transcoded ? [query["Container"].map { "\(id).\($0)" }, id].compactMap { $0 } : [id]
            for name in preferred where FileManager.default.fileExists(atPath: directory.appendingPathComponent("jellyfin/\(folder)/\(name)").path) {
                return ("jellyfin/\(folder)/\(name)", transcoded)
            }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("jellyfin/\(folder)").path)) ?? []   // no folder: nothing served
            return ("jellyfin/\(folder)/" + (names.sorted().first { $0.hasPrefix("\(id).") } ?? id), transcoded)
        }
        if parts.count == 4, parts[2] == "Images" { return ("jellyfin/images/\(id)-\(parts[3]).jpg", false) }
        return nil
    }

    /// The Content-Type of a served file, by its extension.
    static func contentType(_ url: URL) -> String {
        switch url.pathExtension.lowercased() {
        case "mp4", "m4v": return "video/mp4"
        case "mkv": return "video/x-matroska"
        case "webm": return "video/webm"
        case "ts": return "video/mp2t"
        case "html", "htm": return "text/html; charset=utf-8"
        case "json": return "application/json"
        case "jpg", "jpeg": return "image/jpeg"
        case "srt": return "application/x-subrip"
        case "vtt": return "text/vtt"
        case "ass", "ssa": return "text/x-ssa"
        default: return "application/octet-stream"
        }
    }

    /// Maps a URL path to a regular file inside the directory, refusing traversal.
    func resolve(_ path: String, query: [String: String] = [:]) -> ServedFile? {
        guard var decoded = path.removingPercentEncoding, !decoded.contains("\0") else { return nil }
        var transcoded = false
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("jellyfin").path), let route = jellyfinRoute(decoded, query: query) {
            decoded = route.path
            transcoded = route.transcoded
        }
        let parts = decoded.split(separator: "/").filter { $0 != "." }
        guard !parts.contains("..") else { return nil }
        let url = parts.reduce(directory) { $0.appendingPathComponent(String($1)) }
        guard url.path.hasPrefix(directory.path) else { return nil }
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: url.path),   // no such file: 404
              attrs[.type] as? FileAttributeType == .typeRegular,
              let size = (attrs[.size] as? NSNumber)?.int64Value,
              let date = attrs[.modificationDate] as? Date else { return nil }
        return ServedFile(url: url, size: size, mtime: date.timeIntervalSince1970.rounded(.down), transcoded: transcoded)
    }

    func readAll(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

    func writeHead(status: Int, headers: [(String, String)], outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, keepAlive: Bool) async throws {
        var text = "HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n"
        text += "Date: \(Self.httpDate(Date().timeIntervalSince1970))\r\nServer: CourierOrigin\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !keepAlive { text += "Connection: close\r\n" }
        text += "\r\n"
        try await outbound.write(ByteBuffer(string: text))
    }

    func writeSimple(status: Int, extra: [(String, String)] = [], body: String? = nil, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, keepAlive: Bool, isHead: Bool) async throws {
        let text = body ?? "\(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\n"
        try await writeHead(status: status, headers: extra + [("Content-Type", "text/plain"), ("Content-Length", String(text.utf8.count))], outbound: outbound, keepAlive: keepAlive)
        if !isHead { try await outbound.write(ByteBuffer(string: text)) }
    }

    /// A file's strong ETag: its size and its modification time in milliseconds (of a time read to whole seconds).
    static func etag(size: Int64, mtime: Double) -> String {
        "\"\(String(size, radix: 16))-\(String(Int64(mtime * 1000), radix: 16))\""
    }

    static func splitTarget(_ uri: String) -> (String, [String: String]) {
        guard let q = uri.firstIndex(of: "?") else { return (uri, [:]) }
        var query: [String: String] = [:]
        for pair in uri[uri.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)   // `?=x` is a pair with an empty name
            query[String(kv[0])] = kv.count > 1 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
        }
        return (String(uri[..<q]), query)
    }

    static func httpDate(_ seconds: Double) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: Date(timeIntervalSince1970: seconds))
    }
}
