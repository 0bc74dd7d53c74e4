import Foundation

/// Which URLs the engine fetches and which redirects it follows.
public enum URLPolicy {
    /// Validates a URL to fetch: absolute, http or https, with a host, no spaces or control
    /// characters. Returns it unchanged.
    public static func validate(_ text: String) throws -> URL {
        guard text.utf8.count <= 16_384, !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw CourierError(.invalidURL, "the URL holds spaces or control characters")
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw CourierError(.invalidURL, "\(text) is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw CourierError(.unsupportedScheme, "only http and https are supported (got \(scheme))")
        }
        guard let host = url.host, !host.isEmpty else {
            throw CourierError(.invalidURL, "\(text) has no host")
        }
        if let port = explicitPort(text), !(1...65535).contains(port) {
            throw CourierError(.invalidURL, "\(text) names port \(port > 99_999 ? "\(String(port).prefix(12))…" : String(port)): a port is 1 to 65535")
        }
        // A path whose escapes do not decode to UTF-8 (`%FF`) is not sent as written by every
        // HTTP stack (one sent `GET /` for it): refused rather than sent as another request.
        if let components = URLComponents(string: text), components.percentEncodedPath.removingPercentEncoding == nil {
            throw CourierError(.invalidURL, "\(text)'s path has escapes that are not UTF-8 text (such as %FF): it cannot be sent as written")
        }
        return url
    }

    /// The port the URL's authority names, when it names one (`Int.max` for digits that do
    /// not fit: Foundation reads such a port as none, which would silently mean 80 or 443).
    static func explicitPort(_ text: String) -> Int? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority[...]
        let afterHost = hostPort.hasPrefix("[") ? (hostPort.firstIndex(of: "]").map { hostPort[hostPort.index(after: $0)...] } ?? "") : hostPort
        guard let colon = afterHost.lastIndex(of: ":") else { return nil }
        let digits = afterHost[afterHost.index(after: colon)...]
        guard !digits.isEmpty else { return nil }   // `host:` means the scheme's port (RFC 3986)
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return Int.max }
        return Int(digits) ?? Int.max
    }

    /// Resolves a redirect's `Location` against the URL that answered it, and checks it:
    /// http or https only, never from https to http.
    public static func redirectTarget(location: String, from current: URL) throws -> URL {
        guard let resolved = URL(string: location, relativeTo: current)?.absoluteURL else {
            throw CourierError(.invalidURL, "the redirect's Location \(location.prefix(200)) is not a URL")
        }
        let target = try validate(resolved.absoluteString)
        if current.scheme?.lowercased() == "https", target.scheme?.lowercased() == "http" {
            throw CourierError(.insecureRedirect, "refusing a redirect from https to http (\(target.absoluteString))")
        }
        return target
    }
}
