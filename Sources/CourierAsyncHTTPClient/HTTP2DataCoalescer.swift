import NIOCore
import NIOHTTP2

/// Joins the DATA frames that one read of an HTTP/2 stream delivers into one part (at most
/// ``largest`` bytes), before AsyncHTTPClient's handlers see them.
///
/// Servers send a body in small frames (nginx: 8 KiB), and AsyncHTTPClient 1.37 pays for each
/// part it is handed more than once: its stream handler's state sits behind a `willSet`
/// observer, so every part appended copies the whole list of parts not yet read, and a read
/// of a stream with an 8 MiB window can deliver hundreds at once. 1 GiB over HTTPS/2 from
/// nginx cost 2.1–2.7 s of CPU, against 0.55 s over HTTP/1.1 on the same TLS. Joined, a
/// read is a few large parts: 1.2 s (BENCHMARKS.md, "What profiling found"). What it costs:
/// the event loop no longer throttles the stream, so the backlog AsyncHTTPClient's 8 MiB
/// stream window allows now sits in memory when the disk is the slower end (loopback):
/// peak RSS for that 1 GiB 65 → 86–96 MiB.
///
/// What a stream carries is unchanged, in order: the parts of a read are joined and passed
/// on before anything else the stream delivers (the read's end, trailers, a reset, an error,
/// its close), and a frame that ends the stream ends the joined part. Flow control is
/// unaffected: SwiftNIO credits the window as frames leave the stream channel's buffer,
/// before this handler.
final class HTTP2DataCoalescer: ChannelInboundHandler, @unchecked Sendable { // used on its channel's event loop only
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    /// The largest joined part: what one HTTP/1.1 read may be (``ReceiveBuffers``).
    static let largest = ReceiveBuffers.largest

    private var parts: [ByteBuffer] = []
    private var bytes = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .data(let frame) = unwrapInboundIn(data), case .byteBuffer(let buffer) = frame.data else {
            pass(context)
            context.fireChannelRead(data)
            return
        }
        if bytes + buffer.readableBytes > Self.largest { pass(context) }   // a frame larger than the bound goes alone
        parts.append(buffer)
        bytes += buffer.readableBytes
        if frame.endStream || bytes >= Self.largest { pass(context, endStream: frame.endStream) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pass(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        pass(context)
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        pass(context)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        pass(context)
        context.fireChannelInactive()
    }

    /// Passes on what was gathered, as one DATA frame.
    private func pass(_ context: ChannelHandlerContext, endStream: Bool = false) {
        guard !parts.isEmpty else { return }
        var joined: ByteBuffer
        if parts.count == 1 {
            joined = parts[0]
        } else {
            joined = context.channel.allocator.buffer(capacity: bytes)
            for var part in parts { joined.writeBuffer(&part) }
        }
        parts.removeAll(keepingCapacity: true)
        bytes = 0
        context.fireChannelRead(wrapInboundOut(.data(.init(data: .byteBuffer(joined), endStream: endStream))))
    }
}
