import AsyncHTTPClient
import CourierCore
import NIOCore
import NIOPosix

extension KeepAliveOrigins {
    /// Whether `error`, thrown before a reply's head, says the connection was gone
    /// (`closed`), and whether nothing of the request went out first (`nothingSent`).
    static func closedConnection(_ error: any Error) -> (nothingSent: Bool, closed: Bool) {
        if let e = error as? ChannelError, e == .ioOnClosedChannel { return (true, true) }   // found closed before writing
        if let e = error as? HTTPClientError, e == .remoteConnectionClosed { return (false, true) }
        if let e = error as? IOError, e.errnoCode == ECONNRESET || e.errnoCode == EPIPE { return (false, true) }
        return (false, false)
    }
}
