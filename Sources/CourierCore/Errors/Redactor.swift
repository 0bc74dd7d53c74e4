import Foundation

/// Removes secrets from text before it is logged, stored as an error message or printed.
///
/// It redacts the values of query parameters whose names look like credentials
/// (`api_key`, `token`, `signature`, `X-Amz-Signature`, `sig`, `password`, …), user info
/// in URLs (`https://user:pass@host`), and `Authorization`/`Cookie` header values.
public enum Redactor {
    /// Query parameter names (lowercased) whose values are secrets. A name matches when it
    /// equals one of these or ends with `_` or `-` followed by one of them.
    public static let secretParameterNames: Set<String> = [
        "api_key", "apikey", "key", "token", "access_token", "refresh_token", "id_token",
        "auth", "authorization", "signature", "sig", "x-amz-signature", "x-amz-credential",
        "x-amz-security-token", "password", "passwd", "pwd", "secret", "client_secret",
        "session", "sessionid", "code", "jwt", "policy", "key-pair-id", "x-goog-signature",
        "x-goog-credential", "hmac", "__token__", "hdnts",
    ]

    /// The placeholder that replaces a secret.
    public static let mask = "REDACTED"

    /// Redacts every URL and credential-bearing header in free text.
    public static func redact(_ text: String) -> String {
        var out = redactHeaders(in: text)
        out = redactURLs(in: out)
        return out
    }

    /// Redacts one URL string: user info and secret query values.
    public static func redact(url: String) -> String {
        guard var components = URLComponents(string: url) else { return redactQueryLike(url) }
        if components.user != nil || components.password != nil {
            components.user = components.user == nil ? nil : mask
            components.password = components.password == nil ? nil : mask
        }
        if let items = components.percentEncodedQueryItems {
            components.percentEncodedQueryItems = items.map { item in
                isSecret(item.name) ? URLQueryItem(name: item.name, value: mask) : item
            }
        }
        return components.string ?? redactQueryLike(url)
    }

    /// Whether a URL had secrets redacted by ``redact(url:)``: sending it would send the
    /// placeholder instead of the secret.
    public static func isRedacted(url: String) -> Bool {
        guard let components = URLComponents(string: url) else { return url.contains("=" + mask) }
        if components.user == mask || components.password == mask { return true }
        return (components.percentEncodedQueryItems ?? []).contains { $0.value == mask && isSecret($0.name) }
    }

    /// Whether a query parameter name names a secret.
    public static func isSecret(_ name: String) -> Bool {
        let lower = (name.removingPercentEncoding ?? name).lowercased()
        if secretParameterNames.contains(lower) { return true }
        for secret in secretParameterNames where secret.count > 3 {
            if lower.hasSuffix("_" + secret) || lower.hasSuffix("-" + secret) || lower.hasSuffix("." + secret) { return true }
        }
        return false
    }

    private static func redactURLs(in text: String) -> String {
        // Split on whitespace and quotes, redact anything that looks like a URL or a query.
        var result = ""
        var token = ""
        func flush() {
            if token.contains("://") || token.contains("?") || token.contains("&") {
                result += token.contains("://") ? redact(url: token) : redactQueryLike(token)
            } else {
                result += token
            }
            token = ""
        }
        for ch in text {
            if ch.isWhitespace || ch == "\"" || ch == "'" || ch == "<" || ch == ">" || ch == "(" || ch == ")" {
                flush()
                result.append(ch)
            } else {
                token.append(ch)
            }
        }
        flush()
        return result
    }

    /// Redacts `name=value` pairs in a query-like string with no scheme.
    static func redactQueryLike(_ text: String) -> String {
        var out = ""
        var i = text.startIndex
        while i < text.endIndex {
            // Find the next separator-delimited "name=value".
            let sepSet: Set<Character> = ["?", "&", ";"]
            var j = i
            while j < text.endIndex, !sepSet.contains(text[j]) { j = text.index(after: j) }
            let part = text[i..<j]
            if let eq = part.firstIndex(of: "=") {
                let name = String(part[part.startIndex..<eq])
                if isSecret(name) {
                    out += name + "=" + mask
                } else {
                    out += part
                }
            } else {
                out += part
            }
            if j < text.endIndex { out.append(text[j]); j = text.index(after: j) }
            i = j
        }
        return out
    }

    private static func redactHeaders(in text: String) -> String {
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let lower = line.lowercased()
            var replaced = String(line)
            for header in ["authorization:", "proxy-authorization:", "cookie:", "set-cookie:", "x-api-key:", "x-amz-security-token:"] {
                if let r = lower.range(of: header) {
                    let offset = lower.distance(from: lower.startIndex, to: r.upperBound)
                    let cut = line.index(line.startIndex, offsetBy: offset)
                    replaced = String(line[..<cut]) + " " + mask
                    break
                }
            }
            // Bearer tokens written outside a header line.
            if let r = replaced.range(of: "Bearer ", options: .caseInsensitive) {
                replaced = String(replaced[..<r.upperBound]) + mask
            }
            lines.append(replaced)
        }
        return lines.joined(separator: "\n")
    }
}
