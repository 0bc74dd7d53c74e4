import Courier
import Foundation
import Logging

/// Where and how to reach an S3-compatible bucket (AWS, MinIO, R2, moto).
public struct S3Configuration: Sendable {
    /// How the bucket appears in URLs.
    public enum Addressing: Sendable {
        /// `https://endpoint/bucket/key`: MinIO, moto and most S3-compatible servers.
        case pathStyle
        /// `https://bucket.endpoint/key`: AWS's default.
        case virtualHost
    }

    /// The bucket.
    public var bucket: String
    /// A key prefix for every attachment (`attachments/`), may be empty.
    public var prefix: String
    /// The region.
    public var region: String
    /// The endpoint, such as `http://127.0.0.1:5000`; `nil` for AWS (`https://s3.<region>.amazonaws.com`).
    public var endpoint: URL?
    /// Path-style (`endpoint/bucket/key`) or virtual-host (`bucket.endpoint/key`).
    public var addressing: Addressing
    /// Credentials.
    public var accessKeyID: String
    /// Credentials.
    public var secretAccessKey: String
    /// Temporary credentials' token.
    public var sessionToken: String?
    /// Files larger than this go up as a multipart upload (default 16 MiB).
    public var multipartThreshold: Int64 = 16 << 20
    /// The multipart part size (default 8 MiB; S3's minimum is 5 MiB except the last part).
    public var partSize: Int64 = 8 << 20
    /// How long presigned download links live (default 1 h); they are re-signed on resume.
    public var presignExpiry: Int = 3600
    /// Parts of one multipart upload sent at once (default 4).
    public var uploadConcurrency: Int = 4

    /// Makes a configuration.
    public init(bucket: String, prefix: String = "", region: String = "us-east-1", endpoint: URL? = nil, addressing: Addressing = .pathStyle,
                accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.endpoint = endpoint
        self.addressing = addressing
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// Reads `s3://bucket/prefix?endpoint=…&region=…&style=path|virtual` and the standard AWS
    /// environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
    /// `AWS_REGION`/`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`).
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let c = URLComponents(string: url), c.scheme == "s3", let bucket = c.host, !bucket.isEmpty else {
            throw CourierError(.invalidURL, "an S3 remote is s3://bucket/prefix?endpoint=…&region=…")
        }
        let q = Dictionary((c.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty, let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
            throw CourierError(.invalidArgument, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for an S3 remote")
        }
        let endpoint = (q["endpoint"] ?? environment["AWS_ENDPOINT_URL"]).flatMap { URL(string: $0) }
        var prefix = String(c.path.drop(while: { $0 == "/" }))
        if !prefix.isEmpty, !prefix.hasSuffix("/") { prefix += "/" }
        self.init(bucket: bucket, prefix: prefix, region: q["region"] ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1",
                  endpoint: endpoint, addressing: q["style"] == "virtual" ? .virtualHost : .pathStyle,
                  accessKeyID: key, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
    }
}

/// Attachments in an S3-compatible bucket, signed with AWS Signature V4. Large files go up
/// as multipart uploads; downloads are presigned GETs through Courier's resumable engine.
public final class S3RemoteStorage: ResumableRemoteStorage, ConditionalRemoteStorage {
    /// The configuration.
    public let configuration: S3Configuration
    let signer: SigV4Signer
    private let service: ServiceTransport
    /// Where the adapter logs (an upload started again, and why).
    let logger: Logger

    /// Makes an adapter.
    /// - Parameters:
    ///   - configuration: the bucket, prefix, endpoint and credentials.
    ///   - transport: the app's HTTP stack (its `Downloader`'s `transport`); `nil`: the
    ///     platform's default, shut down by ``shutdown()``.
    ///   - logger: where the adapter logs.
    public init(configuration: S3Configuration, transport: (any HTTPTransport)? = nil, logger: Logger = Logger(label: "courier.s3")) {
        self.configuration = configuration
        self.logger = logger
        self.signer = SigV4Signer(accessKeyID: configuration.accessKeyID, secretAccessKey: configuration.secretAccessKey,
                                  sessionToken: configuration.sessionToken, region: configuration.region)
        self.service = ServiceTransport(transport)
    }

    /// Releases the transport when the adapter made it, awaited; call it before dropping
    /// the adapter.
    public func shutdown() async throws {
        try await service.shutdown()
    }

    /// The object URL of a key (path-style or virtual-host), with an optional query;
    /// `E_INVALID_URL` when the configuration cannot make one (a region with a space or a
    /// colon, a virtual-host bucket that is no host name, an IPv6 endpoint for virtual hosts).
    func objectURL(key: String, query: String? = nil) throws -> URL {
        let unusable = CourierError(.invalidURL, "the S3 remote (bucket \(configuration.bucket), region \(configuration.region)) does not form a URL")
        guard let base = configuration.endpoint ?? URL(string: "https://s3.\(configuration.region).amazonaws.com") else { throw unusable }
        let encodedKey = key.split(separator: "/", omittingEmptySubsequences: false).map { SigV4Signer.uriEncode(String($0)) }.joined(separator: "/")
        guard var c = URLComponents(url: base, resolvingAgainstBaseURL: false) else { throw unusable }
        switch configuration.addressing {
        case .pathStyle:
            c.percentEncodedPath = "/\(SigV4Signer.uriEncode(configuration.bucket))/\(encodedKey)"
        case .virtualHost:
            c.host = "\(configuration.bucket).\(c.host ?? "")"
            c.percentEncodedPath = "/\(encodedKey)"
        }
        c.percentEncodedQuery = query
        guard let url = c.url else { throw unusable }
        return url
    }

    func key(for attachment: Attachment) throws -> String {
        configuration.prefix + (try SafePath.validateRelative(attachment.filename))
    }

    /// Sends a signed call (S3 redirects are not followed: a wrong region is an error). A PUT
    /// or POST without a body sends an empty one (`Content-Length: 0` on every stack); a
    /// rate limit a transport applies to whole bodies is waited out before signing, so the
    /// signature is never stale when the request leaves; replies come uncompressed.
    func send(_ method: HTTPRequest.Method, _ url: URL, headers: [(String, String)] = [], payloadHash: String = SigV4Signer.emptyPayloadHash,
              body: TransportRequestBody? = nil, observer: (any RequestBodyObserver)? = nil, timeout: Duration = .seconds(300)) async throws -> TransportResponse {
        var observer = observer
        if let paced = observer, let body, !service.transport.pacesWithinBodies {
            try await paced.willSend(Int(body.length))
            observer = AlreadyPaced(paced)
        }
        let body = body ?? ([.put, .post].contains(method) ? .bytes(Data()) : nil)
        let signed = signer.sign(method: method.rawValue, url: url, headers: headers, payloadHash: payloadHash).map { ($0.0, $0.1) }
        var request = try TransportRequest(url: url.absoluteString, method: method, headers: signed + [("Accept-Encoding", "identity")],
                                           body: body, timeout: timeout)
        request.bodyObserver = observer
        return try await service.transport.send(request)
    }

    /// Creates the bucket if it does not exist (for tests and first runs).
    public func createBucketIfNeeded() async throws {
        let base = try objectURL(key: "")
        var c = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        if configuration.addressing == .pathStyle { c.percentEncodedPath = "/\(SigV4Signer.uriEncode(configuration.bucket))" } else { c.percentEncodedPath = "/" }
        let response = try await send(.put, c.url!)
        let text = try await HTTPCalls.text(response)
        guard (200..<300).contains(response.status) || text.contains("BucketAlreadyOwnedByYou") || text.contains("BucketAlreadyExists") else {
            throw HTTPCalls.failure("creating bucket \(configuration.bucket)", response, text)
        }
    }

    /// Uploads the file: one PUT, or a multipart upload past the threshold.
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        _ = try await upload(fileAt: file, attachment: attachment, precondition: .none)
    }

    /// Uploads the file under a precondition (`If-Match` / `If-None-Match` on the PUT, or on
    /// `CompleteMultipartUpload`); a 412 is `E_CONFLICT`. Returns the new ETag. Nothing is
    /// persisted: a failed multipart upload is aborted (``upload(fileAt:attachment:precondition:journal:)``
    /// is the one that resumes).
    public func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition) async throws -> String? {
        let journal = try UploadJournal.memory(id: "once")
        do {
            return try await upload(fileAt: file, attachment: attachment, precondition: precondition, journal: journal)
        } catch {
            if let uploadID = try? await journal.database.upload(id: journal.id)?.record.remoteId {   // an in-memory read; the upload already failed with its own error
                // Not cancelled with the caller (Ctrl-C): the abort itself must go out.
                let key = try key(for: attachment)
                await Task { await self.abortQuietly(key: key, uploadID: uploadID) }.value
            }
            throw error
        }
    }

    /// The object's current ETag, or `nil` when it is absent.
    public func version(of attachment: Attachment) async throws -> String? {
        let response = try await send(.head, objectURL(key: try key(for: attachment)), timeout: .seconds(60))
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw HTTPCalls.failure("HEAD of \(attachment.filename)", response, "") }
        return response.headerFields.first(name: "ETag")
    }

    /// The number of parts a file of `size` bytes is sent in.
    public func partCount(forSize size: Int64) -> Int {
        let part = partSize(forSize: size)
        return Int((size + part - 1) / part)
    }

    /// GETs the object into `destination` (the queue uses the resumable engine instead).
    public func download(_ attachment: Attachment, to destination: URL) async throws {
        let response = try await send(.get, objectURL(key: try key(for: attachment)))
        guard response.status == 200 else { throw HTTPCalls.failure("download of \(attachment.filename)", response, try await HTTPCalls.text(response)) }
        try await HTTPCalls.save(response, to: destination)
    }

    /// Deletes the object; deleting a missing one succeeds (S3 answers 204 either way).
    public func delete(_ attachment: Attachment) async throws {
        let response = try await send(.delete, objectURL(key: try key(for: attachment)))
        let text = try await HTTPCalls.text(response)
        guard (200..<300).contains(response.status) || response.status == 404 else {
            throw HTTPCalls.failure("delete of \(attachment.filename)", response, text)
        }
    }

    /// The object's ETag (a multipart object's ends in `-<parts>`), or `nil` when it is absent.
    public func objectETag(for attachment: Attachment) async throws -> String? { try await version(of: attachment) }

    /// One page of a bucket listing (XML).
    func listPage(query: String) async throws -> String {
        var c = URLComponents(url: try objectURL(key: ""), resolvingAgainstBaseURL: false)!
        if configuration.addressing == .pathStyle { c.percentEncodedPath = "/\(SigV4Signer.uriEncode(configuration.bucket))" } else { c.percentEncodedPath = "/" }
        c.percentEncodedQuery = query
        let response = try await send(.get, c.url!)
        let text = try await HTTPCalls.text(response)
        guard response.status == 200 else { throw HTTPCalls.failure("listing \(configuration.bucket)", response, text) }
        return text
    }

    /// A freshly presigned GET link.
    public func downloadURL(for attachment: Attachment) async throws -> String {
        signer.presign(url: try objectURL(key: try key(for: attachment)), expires: configuration.presignExpiry).absoluteString
    }

    static func xmlValue(_ tag: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(tag)>"), let end = xml.range(of: "</\(tag)>", range: start.upperBound..<xml.endIndex) else { return nil }
        return String(xml[start.upperBound..<end.lowerBound])
    }
}

import Crypto
enum SHA256Hash {
    static func of(_ data: Data) -> SHA256.Digest { SHA256.hash(data: data) }
}
