import Foundation
import HTTPTypes

/// A request that met a connection the server had already closed: a keep-alive connection
/// the pool kept after the server's keep-alive timeout ended it (many servers close without
/// `Connection: close`). RFC 9112 §9.3.1 lets a client send an idempotent request again at
/// once on a new connection when the old one closed before any reply; curl does so quietly.
/// Counted as a failure, each such request cost a backoff of 1–4 s and one attempt of the
/// budget (four in one chain of redirects). Both transports apply this rule; neither
/// announces the resend, and the engine never sees the first failure.
package enum StaleConnection {
    /// How many times a request is sent again at once: twice, since the pool may hold more
    /// than one connection the server closed (each resend that meets one takes it out).
    package static let resends = 2

    /// Whether a request that failed before any byte of a reply is sent again at once.
    /// - Parameters:
    ///   - nothingSent: the transport knows nothing of the request went out (the connection
    ///     was found closed first): safe for any method.
    ///   - reusedConnection: the connection may have served an earlier reply (the transport
    ///     saw a keep-alive reply from that origin within its pool's idle time).
    /// - Returns: true for any request nothing of which was sent; otherwise for a GET or
    ///   HEAD on a connection that may have been reused (idempotent and bodiless). Uploads
    ///   (an S3 part's PUT, a tus PATCH, a POST that creates) are never sent again here once
    ///   something went out: their own rules ask the server what it holds first.
    package static func mayResend(_ method: HTTPRequest.Method, nothingSent: Bool, reusedConnection: Bool) -> Bool {
        if nothingSent { return true }
        return reusedConnection && (method == .get || method == .head)
    }
}

/// Which origins ended a keep-alive reply lately: a request to one of them that fails
/// before its reply may have met a pooled connection the server closed (``StaleConnection``).
/// Neither AsyncHTTPClient nor URLSession says whether a request went out on a new
/// connection or a reused one; a keep-alive reply from that origin within the pool's idle
/// time is what makes reuse possible. A server that resets every fresh connection has sent none, so its failures
/// stay failures.
package final class KeepAliveOrigins: Sendable {
    private let lastEnd = Locked<[String: ContinuousClock.Instant]>([:])
    /// How long the pool keeps an idle connection (the clients' `idleTimeout`).
    package let idleTime: Duration

    package init(idleTime: Duration) { self.idleTime = idleTime }

    /// The `scheme://authority` an absolute URL starts with, as written: a key, not a
    /// normalized origin (every request of a download spells its origin the same way).
    /// String work only: it runs for every request.
    package static func origin(of url: String) -> Substring {
        guard let scheme = url.range(of: "://") else { return url[...] }
        let end = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        return url[..<end]
    }

    /// A reply from `origin` ended and its connection went back to the pool.
    package func replyEnded(_ origin: Substring) {
        let now = ContinuousClock.now
        lastEnd.withLock { $0[String(origin)] = now }
    }

    /// Whether a connection to `origin` may have been pooled and reused.
    package func mayReuse(_ origin: Substring) -> Bool {
        guard let end = lastEnd.withLock({ $0[String(origin)] }) else { return false }
        return ContinuousClock.now - end < idleTime
    }
}
