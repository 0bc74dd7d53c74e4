import AsyncHTTPClient
import NIOCore
import NIOHTTP2

/// Retires an HTTP/2 connection that AsyncHTTPClient 1.37 would otherwise keep using after it
/// can no longer carry requests. Two ways that happens, both found by the engine's suites
/// over nginx (RELIABILITY.md, "Randomized fault matrix", "Over HTTP/2"):
///
/// - **SwiftNIO HTTP/2 gave up on it.** Against "rapid reset" and similar floods it sends
///   GOAWAY after 200 RST_STREAM frames from the server in 30 s (or too many stream errors,
///   empty DATA or control frames), reports the error, and expects its owner to close the
///   connection. AsyncHTTPClient does not: later resets of its own are dropped, the streams
///   they should close stay open, and once the server's limit of concurrent streams (nginx:
///   128) is used up every request to that origin waits until it times out. A server resets
///   that often without attacking anyone: nginx resets every stream whose upstream fails
///   mid-body. The guard closes the connection; the requests still on it fail as a dropped
///   connection, which the engine retries on a new one.
/// - **Its pool lost streams.** A request cancelled after the pool gave it a stream and
///   before its head went out (a pause or a cancel right after a start) closes a stream
///   channel that never opened a stream; no "stream closed" event follows, and the pool
///   never gets that stream back. After ``lostStreamsBeforeRetiring`` of them the guard shows
///   the pool a GOAWAY (the server never sees it): the pool sends new requests to a new
///   connection, and this one closes once its open streams are done.
final class HTTP2ConnectionGuard: ChannelInboundHandler, @unchecked Sendable { // used on its channel's event loop only
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    /// How many streams the pool may lose on a connection before it is retired: a few, so
    /// that a burst of cancels does not cost a TLS handshake each, and far below any server's
    /// limit of concurrent streams.
    static let lostStreamsBeforeRetiring = 8

    private var context: ChannelHandlerContext?
    private var lostStreams = 0
    private var retired = false
    /// Streams open on the connection (SwiftNIO's events), to close a retired one once idle.
    private var openStreams = 0

    /// AsyncHTTPClient's hook for a new HTTP/2 connection: the guard goes right after
    /// SwiftNIO's HTTP/2 handler, before the pool's own handler, which it must reach first.
    static let install: @Sendable (Channel) -> EventLoopFuture<Void> = { channel in
        channel.eventLoop.makeCompletedFuture {
            let http2 = try channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self)
            try channel.pipeline.syncOperations.addHandler(HTTP2ConnectionGuard(), position: .after(http2))
        }
    }

    /// AsyncHTTPClient's hook for each stream channel: watches whether it opened a stream, and
    /// joins the DATA frames of each read (``HTTP2DataCoalescer``).
    static let watchStream: @Sendable (Channel) -> EventLoopFuture<Void> = { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(HTTP2DataCoalescer(), position: .first)
            try channel.pipeline.syncOperations.addHandler(StreamWatch(), position: .first)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is NIOHTTP2StreamCreatedEvent { openStreams += 1 }
        if event is StreamClosedEvent { openStreams = max(0, openStreams - 1) }
        context.fireUserInboundEventTriggered(event)
        if retired, openStreams == 0 { context.close(mode: .all, promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if Self.endsTheConnection(error) { context.close(mode: .all, promise: nil) }
        context.fireErrorCaught(error)
    }

    /// A stream channel of this connection closed without opening a stream: its lease is lost.
    func streamLost() {
        lostStreams += 1
        guard lostStreams >= Self.lostStreamsBeforeRetiring, !retired, let context else { return }
        retired = true
        // Read by the pool's handler as the server's GOAWAY; no stream is above the last ID,
        // so none is cut short.
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        context.fireChannelRead(wrapInboundOut(goAway))
        // Outside a socket read the multiplexer holds back its streams' flushes after any
        // frame until a read completes: without this, resets and window updates of the
        // streams still open would wait for the server's next frame.
        context.fireChannelReadComplete()
        // The pool closes a connection that drains only when its last stream closes.
        if openStreams == 0 { context.close(mode: .all, promise: nil) }
    }

    /// Whether SwiftNIO HTTP/2 raised `error` as a connection error of its flood guards (it has
    /// sent GOAWAY for it).
    static func endsTheConnection(_ error: any Error) -> Bool {
        error is NIOHTTP2Errors.ExcessiveRSTFrames || error is NIOHTTP2Errors.ExcessiveStreamErrors
            || error is NIOHTTP2Errors.ExcessiveNumberOfGlitches || error is NIOHTTP2Errors.ExcessiveEmptyDataFrames
            || error is NIOHTTP2Errors.ExcessiveControlFrames || error is NIOHTTP2Errors.ExcessiveContinuationFrames
            || error is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering
    }
}

/// In a stream channel: tells the connection's guard when the channel closes without having
/// sent its request's HEADERS (so without ever opening a stream).
final class StreamWatch: ChannelOutboundHandler, ChannelInboundHandler, @unchecked Sendable { // used on its channel's event loop only
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias InboundIn = HTTP2Frame.FramePayload
    private var opened = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .headers = unwrapOutboundIn(data) { opened = true }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !opened, let parent = context.channel.parent,
            let guardHandler = try? parent.pipeline.syncOperations.handler(type: HTTP2ConnectionGuard.self) {   // none: the connection is being torn down
            guardHandler.streamLost()
        }
        context.fireChannelInactive()
    }
}
