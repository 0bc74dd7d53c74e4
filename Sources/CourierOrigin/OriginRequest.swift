import Foundation

/// One request the origin answered, for tests and benchmarks to inspect.
public struct OriginRequest: Sendable, Equatable {
    /// `GET` or `HEAD`.
    public var method: String
    /// The path without the query.
    public var path: String
    /// The request's `Range` header.
    public var range: String?
    /// The request's `If-Range` header.
    public var ifRange: String?
    /// The request's `Accept-Encoding` header.
    public var acceptEncoding: String?
    /// The request's `Authorization` header.
    public var authorization: String?
    /// The status the origin answered.
    public var status: Int
    /// Body bytes the origin sent.
    public var bodyBytesSent: Int64
    /// The raw query string (after `?`), when there was one.
    public var query: String? = nil
    /// The request's `If-None-Match` header.
    public var ifNoneMatch: String? = nil
    /// The request's `If-Modified-Since` header.
    public var ifModifiedSince: String? = nil
    /// The request's `User-Agent` header (tells the HTTP stacks apart in tests).
    public var userAgent: String? = nil
    /// When the request arrived.
    public var receivedAt = Date()
}
