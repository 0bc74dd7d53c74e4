import Foundation

/// Supplies headers (typically `Authorization`) for a download's requests at request time.
///
/// The headers are never stored in the database, logged, or shown in errors, so a token
/// stays out of every file Courier writes. They are sent only to the origin (scheme, host,
/// port) of the download's own URL: a redirect to another origin goes without them, as
/// curl does.
public protocol RequestAuthorizing: Sendable {
    /// Headers to add to a request for `record` going to `url`.
    func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)]
}

/// Fixed headers for every request, such as a bearer token.
public struct StaticHeaders: RequestAuthorizing {
    let values: [(name: String, value: String)]
    /// Sends these headers with every request.
    public init(_ values: [(name: String, value: String)]) { self.values = values }
    /// The fixed headers.
    public func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)] { values }
}

extension URL {
    /// scheme://host:port, for same-origin checks.
    package var origin: String {
        let scheme = (scheme ?? "").lowercased()
        let port = port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\((host ?? "").lowercased()):\(port)"
    }
}
