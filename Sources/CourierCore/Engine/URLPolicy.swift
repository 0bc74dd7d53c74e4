import Foundation

/// Which URLs the engine fetches and which redirects it follows.
public enum URLPolicy {
    /// Validates a URL to fetch: absolute, http or https, with a host, no spaces or control
    /// characters. Returns it unchanged.
    public static func validate(_ text: String) throws -> URL {
        // On the bytes: a scalar below 0x21 (or DEL) is the one byte of the same value in UTF-8.
        guard text.utf8.count <= 16_384, !text.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else {
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
        if text.utf8.contains(UInt8(ascii: "%")), let components = URLComponents(string: text), components.percentEncodedPath.removingPercentEncoding == nil {
            throw CourierError(.invalidURL, "\(text)'s path has escapes that are not UTF-8 text (such as %FF): it cannot be sent as written")
        }
        return url
    }

    /// The port the URL's authority names, when it names one (`Int.max` for digits that do
    /// not fit: Foundation reads such a port as none, which would silently mean 80 or 443).
    /// Read on the UTF-8 bytes, as URL parsers do (every byte that shapes an authority is
    /// ASCII); a non-digit after the port's colon, a combining mark say, is `Int.max` too.
    static func explicitPort(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard let scheme = b.firstRange(of: Array("://".utf8)) else { return nil }
        var start = scheme.upperBound, end = scheme.upperBound
        while end < b.count, b[end] != UInt8(ascii: "/"), b[end] != UInt8(ascii: "?"), b[end] != UInt8(ascii: "#") { end += 1 }
        if let at = b[start..<end].lastIndex(of: UInt8(ascii: "@")) { start = at + 1 }   // after the user info
        if start < end, b[start] == UInt8(ascii: "[") {   // an IPv6 literal: the port follows its `]`
            guard let close = b[start..<end].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            start = close + 1
        }
        guard let colon = b[start..<end].lastIndex(of: UInt8(ascii: ":")), colon + 1 < end else { return nil }   // `host:` means the scheme's port (RFC 3986)
        var port = 0
        for digit in b[(colon + 1)..<end] {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return Int.max }
            let (tens, over) = port.multipliedReportingOverflow(by: 10)
            let (sum, over2) = tens.addingReportingOverflow(Int(digit - UInt8(ascii: "0")))
            if over || over2 { return Int.max }
            port = sum
        }
        return port
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
