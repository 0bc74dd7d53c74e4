import CourierCore
import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's delegate: routes each task's callbacks to the request waiting for its head
/// and to its body stream. The completion handlers are `@Sendable` as Apple declares them
/// (developer.apple.com, URLSessionDataDelegate and URLSessionTaskDelegate): a signature
/// that only nearly matches would never be called there.
final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable { // entries are locked
    struct Entry {
        var head: CheckedContinuation<TransportResponse, any Error>?
        let body: BodyStream
        let url: String
        /// The request body's staged copy, deleted when the task ends.
        var staged: StagedBody?
        /// Hears of the request body's bytes as the session sends them.
        var observer: (any RequestBodyObserver)?
    }

    private let entries = Locked<[Int: Entry]>([:])
    /// The most decoded bytes per encoded byte of a compressed reply.
    let ratio: Int
    /// Origins whose connections the session may have kept (``StaleConnection``).
    let keepAlive = KeepAliveOrigins(idleTime: .seconds(30))

    init(decompressionRatioLimit: Int) {
        ratio = decompressionRatioLimit
    }

    func register(_ task: URLSessionTask, _ entry: Entry) {
        entries.withLock { $0[task.taskIdentifier] = entry }
    }

    /// Ends a registered request that was cancelled before it started: its head waiter gets
    /// `CancellationError`, its stream ends.
    func abandon(_ task: URLSessionTask) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        entry.head?.resume(throwing: CancellationError())
        entry.body.finish(CancellationError())
        entry.staged?.remove()
    }

    /// The reply's head: the waiting request gets status, headers and the body stream.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let head: (CheckedContinuation<TransportResponse, any Error>, BodyStream)? = entries.withLock { all in
            guard var entry = all[dataTask.taskIdentifier], let head = entry.head else { return nil }
            entry.head = nil
            all[dataTask.taskIdentifier] = entry
            return (head, entry.body)
        }
        guard let (continuation, body) = head else {
            completionHandler(.cancel)
            return
        }
        guard let http = response as? HTTPURLResponse else {
            // Not HTTP (a data: or file: URL that slipped past the engine's policy): the
            // request fails instead of waiting for a head that never comes.
            continuation.resume(throwing: CourierError(.unsupportedScheme, "not an HTTP reply"))
            completionHandler(.cancel)
            return
        }
        var headers = HTTPFields()
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String, let field = HTTPField.Name(name) {
                headers.append(HTTPField(name: field, value: value))
            }
        }
        do { try ReplyViolation.checkHeaderBlock(headers, url: dataTask.originalRequest?.url?.absoluteString ?? "the server") } catch {
            continuation.resume(throwing: error)
            completionHandler(.cancel)
            return
        }
        if let coding = headers.first(name: "Content-Encoding"), coding.lowercased() != "identity" {
            let encoded = headers.first(name: "Content-Length").flatMap { Int64($0) } ?? 64 << 10
            body.limitDecoding(encodedLength: encoded, ratio: ratio)
        }
        continuation.resume(returning: TransportResponse(status: http.statusCode, headerFields: headers, body: TransportBody(body)))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        entries.withLock { $0[dataTask.taskIdentifier] }?.body.append(data)
    }

    /// A request body's progress: `bytesSent` more went out.
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        entries.withLock { $0[task.taskIdentifier] }?.observer?.didSend(Int(bytesSent))
    }

    /// The engine follows redirects itself: the 3xx is handed back as the reply.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        entry.staged?.remove()
        let mapped = error.map { URLSessionTransport.map($0, url: entry.url) }
        let origin = KeepAliveOrigins.origin(of: entry.url)
        let connection = (task.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Connection") ?? ""
        if error == nil, !connection.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == "close" }) {
            keepAlive.replyEnded(origin)   // its connection may be kept for the next request
        }
        if let head = entry.head {
            // Lost before any reply, on a connection that may have been kept from an earlier
            // one: the transport sends it again (StaleConnection).
            if let mapped, (error as? URLError)?.code == .networkConnectionLost, keepAlive.mayReuse(origin) {
                head.resume(throwing: ConnectionLostBeforeReply(mapped: mapped))
            } else {
                head.resume(throwing: mapped ?? CourierError(.protocolViolation, "the reply to \(entry.url) ended before its head"))
            }
        }
        entry.body.finish(mapped)
    }
}

/// A request's connection was lost before any byte of its reply; `mapped` is the error a
/// caller sees when it is not sent again.
struct ConnectionLostBeforeReply: Error {
    let mapped: any Error
}
