import Courier
import Foundation

/// Attachments under a base URL: `PUT`, `GET` and `DELETE` of `<base>/<filename>`.
/// Downloads go through Courier's resumable engine (``ResumableRemoteStorage``).
public final class HTTPRemoteStorage: ResumableRemoteStorage, ConditionalRemoteStorage {
    /// The base URL, without a trailing slash.
    public let baseURL: String
    private let headers: [(name: String, value: String)]
    private let service: ServiceTransport

    /// Makes an adapter; `headers` (auth) go with every request and are never persisted.
    /// - Parameters:
    ///   - baseURL: an http or https URL; files go under it.
    ///   - headers: sent with every request (to the base URL's origin only, after a redirect).
    ///   - transport: the app's HTTP stack (its `Downloader`'s `transport`); `nil`: the
    ///     platform's default, shut down by ``shutdown()``.
    public init(baseURL: String, headers: [(name: String, value: String)] = [], transport: (any HTTPTransport)? = nil) throws {
        _ = try URLPolicy.validate(baseURL)
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        _ = try HTTPFields(validating: headers)
        self.headers = headers
        self.service = ServiceTransport(transport)
    }

    /// Releases the transport when the adapter made it, awaited; call it before dropping
    /// the adapter.
    public func shutdown() async throws {
        try await service.shutdown()
    }

    func url(for attachment: Attachment) throws -> String {
        let name = try SafePath.validateRelative(attachment.filename)
        return baseURL + "/" + name.split(separator: "/").map { SigV4Signer.uriEncode(String($0)) }.joined(separator: "/")
    }

    /// Sends a call (with the adapter's headers), following up to 5 redirects.
    private func call(_ method: HTTPRequest.Method, _ url: String, extra: [(name: String, value: String)] = [],
                      body: TransportRequestBody? = nil, timeout: Duration) async throws -> TransportResponse {
        // Uncompressed: a file is stored as the server holds it (as the engine asks too).
        let request = try TransportRequest(url: url, method: method, headers: headers + [("Accept-Encoding", "identity")] + extra,
                                           body: body, timeout: timeout)
        return try await service.transport.send(request, followingRedirects: 5)
    }

    /// PUTs the file, streamed.
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        _ = try await upload(fileAt: file, attachment: attachment, precondition: .none)
    }

    /// PUTs the file, streamed, with `If-Match` / `If-None-Match` for the precondition; a
    /// 412 is `E_CONFLICT`. Returns the reply's `ETag`, when it has one.
    public func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition) async throws -> String? {
        var extra: [(name: String, value: String)] = []
        if let type = attachment.mediaType { extra.append(("Content-Type", type)) }
        if let (name, value) = precondition.header { extra.append((name, value)) }
        let response = try await call(.put, try url(for: attachment), extra: extra,
                                      body: .file(file, offset: 0, length: try HTTPCalls.size(of: file)), timeout: .seconds(300))
        let text = try await HTTPCalls.text(response)
        if response.status == 412 { throw precondition.conflict(attachment.filename) }
        guard (200..<300).contains(response.status) else { throw HTTPCalls.failure("upload of \(attachment.filename)", response, text) }
        return response.headerFields.first(name: "ETag")
    }

    /// The file's `ETag` from a `HEAD` (`nil` on 404).
    public func version(of attachment: Attachment) async throws -> String? {
        try await presence(of: attachment)?.etag
    }

    /// A `HEAD`: the file is there (200, with or without an `ETag`), or not (404, 410).
    public func presence(of attachment: Attachment) async throws -> RemotePresence? {
        let response = try await call(.head, try url(for: attachment), timeout: .seconds(60))
        await response.body.drain()
        if response.status == 404 || response.status == 410 { return nil }
        guard response.status == 200 else { throw HTTPCalls.failure("HEAD of \(attachment.filename)", response, "") }
        return RemotePresence(etag: response.headerFields.first(name: "ETag"), size: response.headerFields.first(name: "Content-Length").flatMap { Int64($0) })
    }

    /// GETs the file into `destination` (the queue uses the resumable engine instead).
    public func download(_ attachment: Attachment, to destination: URL) async throws {
        let response = try await call(.get, try url(for: attachment), timeout: .seconds(300))
        guard response.status == 200 else { throw HTTPCalls.failure("download of \(attachment.filename)", response, try await HTTPCalls.text(response)) }
        try await HTTPCalls.save(response, to: destination)
    }

    /// DELETEs the file; 404 counts as done.
    public func delete(_ attachment: Attachment) async throws {
        let response = try await call(.delete, try url(for: attachment), timeout: .seconds(60))
        let text = try await HTTPCalls.text(response)
        guard (200..<300).contains(response.status) || response.status == 404 else {
            throw HTTPCalls.failure("delete of \(attachment.filename)", response, text)
        }
    }

    /// `<base>/<filename>`.
    public func downloadURL(for attachment: Attachment) async throws -> String { try url(for: attachment) }

    /// The adapter's headers.
    public func downloadHeaders(for attachment: Attachment) async throws -> [(name: String, value: String)] { headers }
}
