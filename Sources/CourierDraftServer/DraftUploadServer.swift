import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOResumableUpload

/// A server of the IETF draft "Resumable Uploads for HTTP" (interop versions 3, 5 and 6)
/// through SwiftNIO's own implementation (`NIOResumableUpload`), none of Courier's code: a
/// `POST` to a path creates an upload, resumed at `/resumable_upload/…`, and the file is
/// stored at that path under ``directory`` once the upload is complete (issue 48). For tests
/// of Courier's client against another implementation, and `courier serve
/// --resumable-uploads-port`; in no product an app links. Every request is logged, with the
/// body bytes it brought.
public final class DraftUploadServer: Sendable {
    /// One request as the server saw it.
    public struct Request: Sendable {
        public let method: String
        public let path: String
        /// `Upload-Offset`, when the request said one.
        public let offset: Int64?
        /// Body bytes that arrived (also of a request cut short).
        public internal(set) var bodyBytes: Int64
        /// Whether the request ended whole (`false`: its connection closed before its end).
        public internal(set) var ended = false

        /// One line for a log: `PATCH /resumable_upload/… offset 0: 8388608 body bytes`.
        public var line: String {
            "\(method) \(path)\(offset.map { " offset \($0)" } ?? ""): \(bodyBytes) body bytes\(ended ? "" : ", cut")"
        }
    }

    /// Where complete uploads are stored.
    public let directory: URL
    /// The address and port it listens on.
    public let host: String
    public let port: Int
    let channel: any Channel
    let group: MultiThreadedEventLoopGroup
    let log: NIOLockedValueBox<[Request]>

    private init(directory: URL, host: String, port: Int, channel: any Channel, group: MultiThreadedEventLoopGroup, log: NIOLockedValueBox<[Request]>) {
        self.directory = directory
        self.host = host
        self.port = port
        self.channel = channel
        self.group = group
        self.log = log
    }

    /// Starts serving on `host` and `port` (0: a free one); `onRequest` hears of each request
    /// once it ended or its connection closed.
    public static func start(directory: URL, host: String = "127.0.0.1", port: Int = 0,
                             onRequest: (@Sendable (Request) -> Void)? = nil) async throws -> DraftUploadServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let context = NIOLockedValueBox<HTTPResumableUploadContext?>(nil)   // set once the port is known, before any connection
        let log = NIOLockedValueBox<[Request]>([])
        let root = directory.standardizedFileURL
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let uploads = context.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try sync.addHandler(RequestLog(log, onRequest))
                    try sync.addHandler(HTTPResumableUploadHandler(context: uploads, channelConfigurator: { upload in
                        try? upload.pipeline.syncOperations.addHandler(StoreUpload(root: root))   // fails only on a closed channel: no upload left to store
                    }))
                }
            }
            .bind(host: host, port: port).get()
        let bound = channel.localAddress?.port ?? 0
        context.withLockedValue { $0 = HTTPResumableUploadContext(origin: "http://\(host.contains(":") ? "[\(host)]" : host):\(bound)") }
        return DraftUploadServer(directory: root, host: host, port: bound, channel: channel, group: group, log: log)
    }

    /// The URL of `path` on this server (a creation goes to it).
    public func url(_ path: String) -> URL { URL(string: "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (path.hasPrefix("/") ? path : "/" + path))! }

    /// Every request so far, oldest first.
    public var requests: [Request] { log.withLockedValue { $0 } }

    /// Stops listening and closes every connection.
    public func stop() async throws {
        try? await channel.close()   // stopping: already closed is fine
        try await group.shutdownGracefully()
    }
}

/// Logs each request and counts the body bytes it brings; tells `onRequest` of each once it
/// ended, or once its connection closed before its end.
private final class RequestLog: ChannelInboundHandler, @unchecked Sendable {   // on its channel's event loop only
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    let log: NIOLockedValueBox<[DraftUploadServer.Request]>
    let onRequest: (@Sendable (DraftUploadServer.Request) -> Void)?
    var index: Int?

    init(_ log: NIOLockedValueBox<[DraftUploadServer.Request]>, _ onRequest: (@Sendable (DraftUploadServer.Request) -> Void)?) {
        self.log = log
        self.onRequest = onRequest
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(request):
            let offset = request.headerFields[HTTPField.Name("Upload-Offset")!].flatMap { Int64($0) }
            index = log.withLockedValue { log in
                log.append(.init(method: request.method.rawValue, path: request.path ?? "", offset: offset, bodyBytes: 0))
                return log.count - 1
            }
        case let .body(buffer):
            if let index { log.withLockedValue { $0[index].bodyBytes += Int64(buffer.readableBytes) } }
        case .end:
            if let index { log.withLockedValue { $0[index].ended = true } }
            report()
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        report()
        context.fireChannelInactive()
    }

    private func report() {
        guard let index else { return }
        self.index = nil
        if let onRequest { onRequest(log.withLockedValue { $0[index] }) }
    }
}

/// The application's side of one upload: its bytes go to a temporary file, moved to the
/// creation's path once the upload is complete; answered 201.
private final class StoreUpload: ChannelInboundHandler, @unchecked Sendable {   // on its channel's event loop only
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart
    let root: URL
    var target: URL?
    var temporary: URL?
    var handle: FileHandle?
    var writeFailed = false

    init(root: URL) { self.root = root }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(request):
            let target = root.appendingPathComponent(String((request.path ?? "").drop { $0 == "/" }).split(separator: "?").first.map(String.init) ?? "")
                .standardizedFileURL
            guard request.method == .post || request.method == .put, target.path.hasPrefix(root.path + "/") else { return respond(context, .badRequest) }
            try? FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)   // not made: the file below fails, 500
            let temporary = target.deletingLastPathComponent().appendingPathComponent(".upload-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil), let handle = FileHandle(forWritingAtPath: temporary.path) else {
                return respond(context, .internalServerError)
            }
            (self.target, self.temporary, self.handle) = (target, temporary, handle)
        case let .body(buffer):
            do { try buffer.withUnsafeReadableBytes { try handle?.write(contentsOf: $0) } } catch { writeFailed = true }
        case .end:
            guard let handle, let target, let temporary else { return }
            self.handle = nil
            do {
                try handle.close()
                guard !writeFailed else { throw CocoaError(.fileWriteUnknown) }
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: target.path, isDirectory: &isFolder) {
                    guard !isFolder.boolValue else { throw CocoaError(.fileWriteFileExists) }   // a folder is never replaced
                    try FileManager.default.removeItem(at: target)
                }
                try FileManager.default.moveItem(at: temporary, to: target)
                respond(context, .created)
            } catch {
                try? FileManager.default.removeItem(at: temporary)   // cleanup of a failed upload: one left behind is only litter
                respond(context, .internalServerError)
            }
        }
    }

    /// An upload given up (its channel gone before the end): its bytes go.
    func handlerRemoved(context: ChannelHandlerContext) {
        guard let handle, let temporary else { return }
        self.handle = nil
        try? handle.close()   // the handle of a file deleted next: nothing to keep
        try? FileManager.default.removeItem(at: temporary)   // cleanup: one left behind is only litter
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status) {
        var response = HTTPResponse(status: status)
        response.headerFields[.contentLength] = "0"
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
