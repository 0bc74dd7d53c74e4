import Foundation

/// The one way to hand the engine what expiring links and protected servers need: fresh
/// URLs and request-time headers, from two closures, never persisted. Pass the same value
/// as both the `urlRefresher` and the `requestAuthorizer` of a ``Downloader``.
///
/// ```swift
/// let link = Credentials(freshURL: { record, _ in try await signer.presign(record.localFinalPath) },
///                        headers: { _, _ in [("Authorization", "Bearer \(token)")] })
/// let downloader = Downloader(configuration: config, database: db, urlRefresher: link, requestAuthorizer: link)
/// ```
public struct Credentials: URLRefreshing, RequestAuthorizing {
    private let fresh: @Sendable (DownloadRecord, URLRefreshReason) async throws -> String?
    private let auth: @Sendable (DownloadRecord, URL) async throws -> [(name: String, value: String)]

    /// - Parameters:
    ///   - freshURL: a fresh URL for the record (before resuming kept bytes, after a
    ///     401/403/410), or `nil` for none; none by default.
    ///   - headers: headers for a request to `url` (only same-origin ones get them after
    ///     a redirect); none by default.
    public init(freshURL: @escaping @Sendable (DownloadRecord, URLRefreshReason) async throws -> String? = { _, _ in nil },
                headers: @escaping @Sendable (DownloadRecord, URL) async throws -> [(name: String, value: String)] = { _, _ in [] }) {
        fresh = freshURL
        auth = headers
    }

    public func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String? {
        try await fresh(record, reason)
    }

    public func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)] {
        try await auth(record, url)
    }
}
