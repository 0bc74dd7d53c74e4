import Foundation

/// Where a request goes after redirects, and whether it may carry credentials there: the
/// one place for the redirect rules (async-http-client's `RedirectState`, our rules).
///
/// - At most `limit` redirects, each resolved against the current URL, http(s) only, never
///   from https to http (``URLPolicy/redirectTarget(location:from:)``).
/// - Credentials (`Authorization`, a ``RequestAuthorizing`` hook's headers) go only to the
///   origin (scheme, host, port) of the download's own URL, as curl does.
public struct RedirectState: Sendable {
    /// The download's own URL.
    public let origin: URL
    /// Where the next request goes.
    public private(set) var current: URL
    /// Redirects followed so far.
    public private(set) var count = 0
    /// The most redirects followed.
    public let limit: Int

    /// Starts at `url`.
    public init(url: URL, limit: Int) {
        origin = url
        current = url
        self.limit = limit
    }

    /// Follows a redirect to `location`; throws when over the limit or the target is refused.
    public mutating func follow(_ location: String) throws {
        count += 1
        guard count <= limit else { throw CourierError(.tooManyRedirects, "more than \(limit) redirects") }
        current = try URLPolicy.redirectTarget(location: location, from: current)
    }

    /// Whether the current request may carry the download's credentials.
    public var sendsCredentials: Bool { current.origin == origin.origin }
}
