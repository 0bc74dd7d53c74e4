@testable import CourierAsyncHTTPClient
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// `HTTP2DataCoalescer` joins the DATA frames of one read into one part and changes nothing
/// else about what a stream carries: order, the end of the stream, frames that are not
/// DATA, errors, the close. Checked on an `EmbeddedChannel` standing in for a stream
/// channel (the join over a real nginx is in HTTP2Tests).
struct HTTP2DataCoalescerTests {
    enum Seen: Equatable {
        case data([UInt8], end: Bool)
        case headers
        case readComplete
        case error
        case event
        case inactive
    }

    /// Records what reaches the handler after the coalescer (AsyncHTTPClient's, in a client).
    final class Recorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame.FramePayload
        var seen: [Seen] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .data(let d):
                guard case .byteBuffer(let b) = d.data else { return }
                seen.append(.data(Array(b.readableBytesView), end: d.endStream))
            case .headers: seen.append(.headers)
            default: break
            }
        }
        func channelReadComplete(context: ChannelHandlerContext) { seen.append(.readComplete) }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { seen.append(.error) }
        func channelInactive(context: ChannelHandlerContext) { seen.append(.inactive) }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) { seen.append(.event) }
    }

    struct Boom: Error {}
    /// A user event, as a stream's close or reset reaches its pipeline.
    struct Nudge {}

    func channel() throws -> (EmbeddedChannel, Recorder) {
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([HTTP2DataCoalescer(), recorder])
        return (channel, recorder)
    }

    /// A frame as the stream channel delivers it: `fireChannelRead` (`writeInbound` would
    /// end the read after each frame).
    func data(_ bytes: [UInt8], end: Bool = false) -> HTTP2Frame.FramePayload {
        .data(.init(data: .byteBuffer(ByteBuffer(bytes: bytes)), endStream: end))
    }

    @Test func theFramesOfOneReadArriveAsOnePartBeforeTheReadsEnd() throws {
        let (channel, recorder) = try channel()
        channel.pipeline.fireChannelRead(data([1, 2]))
        channel.pipeline.fireChannelRead(data([3]))
        channel.pipeline.fireChannelRead(data([4, 5, 6]))
        #expect(recorder.seen.isEmpty)
        channel.pipeline.fireChannelReadComplete()
        channel.pipeline.fireChannelRead(data([7]))
        channel.pipeline.fireChannelReadComplete()
        #expect(recorder.seen == [.data([1, 2, 3, 4, 5, 6], end: false), .readComplete, .data([7], end: false), .readComplete])
    }

    @Test func theFrameThatEndsTheStreamEndsThePart() throws {
        let (channel, recorder) = try channel()
        channel.pipeline.fireChannelRead(data([1]))
        channel.pipeline.fireChannelRead(data([2], end: true))
        #expect(recorder.seen == [.data([1, 2], end: true)])
        channel.pipeline.fireChannelRead(data([], end: true))
        #expect(recorder.seen.last == .data([], end: true))
    }

    @Test func whatIsNotDataKeepsItsPlaceAfterTheDataBeforeIt() throws {
        let (channel, recorder) = try channel()
        channel.pipeline.fireChannelRead(data([1]))
        channel.pipeline.fireChannelRead(HTTP2Frame.FramePayload.headers(.init(headers: [:], endStream: true)))
        channel.pipeline.fireChannelRead(data([2]))
        channel.pipeline.fireErrorCaught(Boom())
        channel.pipeline.fireChannelRead(data([3]))
        channel.pipeline.fireUserInboundEventTriggered(Nudge())
        channel.pipeline.fireChannelRead(data([4]))
        channel.pipeline.fireChannelInactive()
        #expect(recorder.seen == [.data([1], end: false), .headers, .data([2], end: false), .error, .data([3], end: false), .event,
                                  .data([4], end: false), .inactive])
    }

    @Test func aPartNeverGrowsPastTheBound() throws {
        let (channel, recorder) = try channel()
        let frame = [UInt8](repeating: 7, count: 16 << 10)
        let frames = HTTP2DataCoalescer.largest / frame.count * 2 + 1
        for _ in 0..<frames { channel.pipeline.fireChannelRead(data(frame)) }
        channel.pipeline.fireChannelReadComplete()
        let sizes = recorder.seen.compactMap { if case let .data(bytes, _) = $0 { bytes.count } else { nil } }
        #expect(sizes == [HTTP2DataCoalescer.largest, HTTP2DataCoalescer.largest, frame.count])
        #expect(recorder.seen.last == .readComplete)
    }

    /// Frames that do not add up to the bound: a part ends before the frame that would
    /// take it past it (nginx's frames plus TLS reads make such sizes; HTTP2Tests met one).
    @Test func unevenFramesNeverTakeAPartPastTheBound() throws {
        let (channel, recorder) = try channel()
        let frame = [UInt8](repeating: 1, count: 10_000)
        for _ in 0..<120 { channel.pipeline.fireChannelRead(data(frame)) }
        channel.pipeline.fireChannelReadComplete()
        let sizes = recorder.seen.compactMap { if case let .data(bytes, _) = $0 { bytes.count } else { nil } }
        #expect(sizes.allSatisfy { $0 <= HTTP2DataCoalescer.largest }, "\(sizes)")
        #expect(sizes.reduce(0, +) == 120 * frame.count)
        #expect(sizes.first == HTTP2DataCoalescer.largest / frame.count * frame.count)
    }
}
