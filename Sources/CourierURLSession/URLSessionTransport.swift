import CourierCore
import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An `HTTPTransport` over `URLSession` data tasks: the system's networking and TLS, and
/// its policies (cellular, expensive and constrained networks, waiting for connectivity).
///
/// The body streams through the session's delegate into the engine as it arrives; when the
/// engine falls more than ``URLSessionTransport/bufferLimit`` bytes behind (a slow disk), the task is suspended
/// until it catches up, so nothing is buffered whole. Redirects are handed back to the
/// engine (it follows them under its own rules); the engine's `Accept-Encoding: identity`
/// is sent as is.
///
/// On Linux this runs on swift-corelibs-foundation's URLSession (libcurl); the policies
/// that only Apple's URLSession has are ignored there (see ``URLSessionTransport/Policies``).
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable { // immutable after init; the router is locked
    /// What the system may use for a download.
    public struct Policies: Sendable, Equatable {
        /// Whether cellular networks may be used (Apple platforms).
        public var allowsCellularAccess = true
        /// Whether networks the system deems expensive may be used (Apple platforms).
        public var allowsExpensiveNetworkAccess = true
        /// Whether networks in Low Data Mode may be used (Apple platforms).
        public var allowsConstrainedNetworkAccess = true
        /// Whether a request waits for connectivity instead of failing at once (Apple platforms).
        public var waitsForConnectivity = false
        /// How long a request may wait for its reply's head (and between body bytes).
        public var requestTimeout: Duration = .seconds(60)

        /// The defaults: every network, fail fast when offline.
        public init() {}
    }

    /// The most body bytes held between the network and the engine before the task is suspended.
    public let bufferLimit: Int
    let session: URLSession
    private let router: TaskRouter
    private let isShutDown = Locked(false)
    /// The most body bytes any reply held at once: what the backpressure bounds.
    let bufferHighWater = Locked(0)

    /// Makes a transport with its own session.
    /// - Parameters:
    ///   - policies: what the system may use.
    ///   - bufferLimit: body bytes held before the task is suspended.
    ///   - decompressionRatioLimit: the largest decoded/encoded ratio accepted from a server
    ///     that compresses anyway (the system decodes it): a bound against decompression bombs.
    public init(policies: Policies = Policies(), bufferLimit: Int = 4 << 20, decompressionRatioLimit: Int = 100) {
        let configuration = URLSessionConfiguration.default
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let timeout = policies.requestTimeout.components
        configuration.timeoutIntervalForRequest = max(1, Double(timeout.seconds) + Double(timeout.attoseconds) / 1e18)
        configuration.allowsCellularAccess = policies.allowsCellularAccess
        policies.applyPlatformPolicies(to: configuration)   // URLSessionPolicies+Darwin.swift; nothing on Linux
        self.bufferLimit = bufferLimit
        let router = TaskRouter(decompressionRatioLimit: decompressionRatioLimit)
        self.router = router
        self.session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    /// URLSession cannot hold a body back within it: a rate limit paces whole bodies.
    public var pacesWithinBodies: Bool { false }

    /// Sends the request; returns once the reply's head has arrived. A GET or HEAD whose
    /// connection was lost before any reply (`NSURLErrorNetworkConnectionLost`, what the
    /// system reports for a keep-alive connection the server had closed) is sent again at
    /// once (the rule of `StaleConnection` in CourierCore), never counted as a failure.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var resends = 0
        while true {
            do {
                return try await sendOnce(request)
            } catch let lost as ConnectionLostBeforeReply {
                guard !Task.isCancelled, resends < StaleConnection.resends,
                      StaleConnection.mayResend(request.method, nothingSent: false, reusedConnection: true) else { throw lost.mapped }
                resends += 1
            }
        }
    }

    private func sendOnce(_ request: TransportRequest) async throws -> TransportResponse {
        // A task of an invalidated session is not to be made (Apple raises an exception).
        if isShutDown.withLock({ $0 }) { throw CourierError(.invalidState, "the URLSession transport was shut down") }
        guard let url = URL(string: request.url) else { throw CourierError(.invalidURL, "invalid URL \(request.url)") }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        if let timeout = request.timeout { urlRequest.timeoutInterval = max(0.001, timeout.timeInterval) }
        for field in request.headerFields where request.body == nil || field.name != .contentLength {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        // URLSession cannot be held back within a body: a rate limit paces whole bodies.
        if let body = request.body, let observer = request.bodyObserver { try await observer.willSend(Int(body.length)) }
        let (task, staged) = try makeTask(urlRequest, body: request.body)
        let stream = BodyStream(task: task, limit: bufferLimit, highWater: bufferHighWater)
        let target = request.url
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (head: CheckedContinuation<TransportResponse, any Error>) in
                router.register(task, TaskRouter.Entry(head: head, body: stream, url: target, staged: staged, observer: request.bodyObserver))
                // Cancelled before it started (onCancel may have run before the register):
                // end it here, so the waiter is never left without an answer.
                if Task.isCancelled {
                    task.cancel()
                    router.abandon(task)
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Ends the session; running tasks are cancelled.
    public func shutdown() async throws {
        guard isShutDown.withLock({ let was = $0; $0 = true; return !was }) else { return }
        session.invalidateAndCancel()
    }

    /// The session holds its delegate until invalidated (Apple: "If you do not invalidate
    /// the session, your app leaks memory"): a transport dropped without ``shutdown()``
    /// lets its running tasks finish, then releases the session.
    deinit {
        if isShutDown.withLock({ !$0 }) { session.finishTasksAndInvalidate() }
    }

    /// A `URLError` (or any error of the session) as a `CourierError`.
    package static func map(_ error: any Error, url: String) -> any Error {
        if error is CancellationError || error is CourierError { return error }
        guard let e = error as? URLError else {
            return CourierError(.network, "network error talking to \(url): \(error)", underlying: error)
        }
        let text = e.localizedDescription
        // libcurl's complaint about a reply that breaks HTTP, in FoundationNetworking's text.
        let violation = ReplyViolation.words(text)
        switch e.code {
        case .cancelled: return CancellationError()
        case .cannotConnectToHost: return CourierError(.connectionRefused, "connection refused by \(url) (nothing listens there)", underlying: e)
        case .timedOut: return CourierError(.timeout, "timed out talking to \(url)", underlying: e)
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired:
            let reason: String
            switch e.code {
            case .serverCertificateHasBadDate, .serverCertificateNotYetValid: reason = "expired"
            case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot: reason = "untrusted"
            default: reason = e.localizedDescription
            }
            return CourierError(.tls, "the TLS handshake with \(url) failed: \(TLSFailure.words(reason))", underlying: e)
        case .cannotParseResponse:
            return ReplyViolation.error(violation ?? "the system could not parse it", url: url, underlying: e)
        case .badServerResponse where violation != nil, .unsupportedURL where violation != nil:
            // Only when it says what broke: FoundationNetworking files curl's "Empty reply
            // from server" (a restart, a dropped keep-alive: it passes) under badServerResponse
            // too, and "Unsupported HTTP version in response" under unsupportedURL.
            return ReplyViolation.error(violation!, url: url, underlying: e)
        case .badURL, .unsupportedURL: return CourierError(.invalidURL, "invalid URL \(url)", underlying: e)
        case .appTransportSecurityRequiresSecureConnection:
            return CourierError(.unsupportedScheme, "App Transport Security refuses plain http to \(url): use https, or an exception in Info.plist", underlying: e)
        case .dataNotAllowed, .internationalRoamingOff:
            return CourierError(.networkNotAllowed, "the system's network policy does not allow this download now (cellular, expensive or Low Data Mode network): \(url)", underlying: e)
        default:
            // FoundationNetworking reports a certificate libcurl refused as an unknown error
            // (-1) whose text is curl's ("SSL certificate problem: self-signed certificate"):
            // a TLS failure, which no retry mends.
            if e.code == .unknown, text.hasPrefix("SSL certificate") || text.hasPrefix("SSL peer certificate")
                || text.hasPrefix("SSL: ") && text.localizedCaseInsensitiveContains("certificate") {
                return CourierError(.tls, "the TLS handshake with \(url) failed: \(TLSFailure.words(text))", underlying: e)
            }
            // And a reply libcurl could not parse as an unknown error with its complaint.
            if e.code == .unknown, let violation {
                return ReplyViolation.error(violation, url: url, underlying: e)
            }
            return CourierError(.network, "network error talking to \(url): \(text)", underlying: e)
        }
    }
}

#if canImport(FoundationNetworking)
extension URLSessionTransport.Policies {
    /// FoundationNetworking has none of Apple's other network policies: nothing to set.
    func applyPlatformPolicies(to configuration: URLSessionConfiguration) {}
}
#endif
