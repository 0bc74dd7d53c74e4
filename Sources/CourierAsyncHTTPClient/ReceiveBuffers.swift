import NIOCore

/// How an HTTP/1.1 connection of the package's own clients reads its socket: buffers that
/// grow with the data up to 512 KiB (SwiftNIO's default stops at 64 KiB), one read per
/// wake-up (the default is up to four).
///
/// A body then reaches the engine in a few large parts instead of many 64 KiB ones, and
/// each part costs a trip through the pipeline, AsyncHTTPClient's body stream and a task
/// wake-up, and on loopback a window update that the kernel answers by pushing the sender's
/// next bytes in the reader's time. Measured on 1 GiB from nginx over one connection (user
/// + sys, BENCHMARKS.md "What profiling found"): 0.81 s with the defaults, 0.49–0.55 s with
/// these. One read per wake-up bounds what a wake-up can queue ahead of the engine (four
/// 512 KiB reads would hold 2 MiB more at the peak); a small body never grows the buffer.
/// HTTP/2 connections keep SwiftNIO's defaults: their frames, not the reads, are the cost
/// (``HTTP2DataCoalescer``).
///
/// Only on SwiftNIO's own sockets (Linux, and any platform without Network.framework). On
/// Apple platforms AsyncHTTPClient's clients run on SwiftNIO Transport Services, whose
/// channels take neither option and stop the process on an option they do not know; there
/// the connection keeps its defaults (and URLSession, not this transport, is the default).
enum ReceiveBuffers {
    static let largest = 512 << 10

    /// For `HTTPClient.Configuration.http1_1ConnectionDebugInitializer`.
    static let configure: @Sendable (Channel) -> EventLoopFuture<Void> = { channel in
        #if canImport(Network) || COURIER_DARWIN_TYPECHECK
        return channel.eventLoop.makeSucceededVoidFuture()
        #else
        return channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: largest))
            .flatMap { channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1) }
        #endif
    }
}
