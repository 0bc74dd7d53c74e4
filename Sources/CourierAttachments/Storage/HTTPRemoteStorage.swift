import AsyncHTTPClient
import Courier
import Foundation
import NIOCore
import NIOHTTP1

/// Attachments under a base URL: `PUT`, `GET` and `DELETE` of `<base>/<filename>`.
/// Downloads go through Courier's resumable engine (``ResumableRemoteStorage``).
public final class HTTPRemoteStorage: ResumableRemoteStorage, ConditionalRemoteStorage {
    /// The base URL, without a trailing slash.
    public let baseURL: String
    private let headers: [(name: String, value: String)]
    private let owned: OwnedHTTPClient
    private var client: HTTPClient { owned.client }

    /// Makes an adapter; `headers` (auth) go with every request and are never persisted.
    public init(baseURL: String, headers: [(name: String, value: String)] = []) throws {
        self.baseURL = try OwnedHTTPClient.baseURL(baseURL)
        self.headers = headers
        self.owned = .forService()
    }

    /// Releases the HTTP client, awaited; call it before dropping the adapter (a dropped
    /// one still releases it, without waiting).
    public func shutdown() async throws {
        try await owned.shutdown()
    }

    func url(for attachment: Attachment) throws -> String {
        let name = try SafePath.validateRelative(attachment.filename)
        return baseURL + "/" + name.split(separator: "/").map { SigV4Signer.uriEncode(String($0)) }.joined(separator: "/")
    }

    private func request(_ method: HTTPMethod, _ url: String) -> HTTPClientRequest {
        var r = HTTPClientRequest(url: url)
        r.method = method
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        return r
    }

    /// PUTs the file, streamed.
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        _ = try await upload(fileAt: file, attachment: attachment, precondition: .none)
    }

    /// PUTs the file, streamed, with `If-Match` / `If-None-Match` for the precondition; a
    /// 412 is `E_CONFLICT`. Returns the reply's `ETag`, when it has one.
    public func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition) async throws -> String? {
        var r = request(.PUT, try url(for: attachment))
        if let type = attachment.mediaType { r.headers.add(name: "Content-Type", value: type) }
        if let (name, value) = precondition.header { r.headers.add(name: name, value: value) }
        r.body = FileChunks(url: file, offset: 0, length: try FileChunks.size(of: file)).body
        let response = try await HTTPCalls.execute(client, r, timeout: .seconds(300))
        let text = try await HTTPCalls.text(response)
        if response.status == .preconditionFailed { throw precondition.conflict(attachment.filename) }
        guard (200..<300).contains(response.status.code) else { throw HTTPCalls.failure("upload of \(attachment.filename)", response, text) }
        return response.headers.first(name: "ETag")
    }

    /// The file's `ETag` from a `HEAD` (`nil` on 404).
    public func version(of attachment: Attachment) async throws -> String? {
        let response = try await HTTPCalls.execute(client, request(.HEAD, try url(for: attachment)), timeout: .seconds(60))
        if response.status == .notFound || response.status == .gone { return nil }
        guard response.status == .ok else { throw HTTPCalls.failure("HEAD of \(attachment.filename)", response, "") }
        return response.headers.first(name: "ETag")
    }

    /// GETs the file into `destination` (the queue uses the resumable engine instead).
    public func download(_ attachment: Attachment, to destination: URL) async throws {
        let response = try await HTTPCalls.execute(client, request(.GET, try url(for: attachment)), timeout: .seconds(300))
        guard response.status == .ok else { throw HTTPCalls.failure("download of \(attachment.filename)", response, try await HTTPCalls.text(response)) }
        try await HTTPCalls.save(response, to: destination)
    }

    /// DELETEs the file; 404 counts as done.
    public func delete(_ attachment: Attachment) async throws {
        let response = try await HTTPCalls.execute(client, request(.DELETE, try url(for: attachment)), timeout: .seconds(60))
        let text = try await HTTPCalls.text(response)
        guard (200..<300).contains(response.status.code) || response.status == .notFound else {
            throw HTTPCalls.failure("delete of \(attachment.filename)", response, text)
        }
    }

    /// `<base>/<filename>`.
    public func downloadURL(for attachment: Attachment) async throws -> String { try url(for: attachment) }

    /// The adapter's headers.
    public func downloadHeaders(for attachment: Attachment) async throws -> [(name: String, value: String)] { headers }
}
