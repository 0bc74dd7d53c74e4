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
        return url
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
