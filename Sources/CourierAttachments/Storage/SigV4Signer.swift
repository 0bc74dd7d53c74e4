import Courier
import Crypto
import Foundation

/// AWS Signature Version 4 for S3-compatible services: header signing and presigned URLs.
/// Checked against AWS's published S3 signing examples (see the tests).
public struct SigV4Signer: Sendable {
    /// The access key id.
    public var accessKeyID: String
    /// The secret access key.
    public var secretAccessKey: String
    /// A session token for temporary credentials.
    public var sessionToken: String?
    /// The region, such as `us-east-1`.
    public var region: String
    /// The service, `s3`.
    public var service: String

    /// Makes a signer.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, region: String, service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
    }

    /// The SHA-256 of an empty payload.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The payload hash for bodies that are streamed without hashing.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// Returns `headers` plus `x-amz-date`, `x-amz-content-sha256`, the session token when
    /// there is one, and `Authorization`. `Host` is taken from the URL.
    public func sign(method: String, url: URL, headers: [(String, String)] = [], payloadHash: String, date: Date = Date()) -> [(String, String)] {
        let (amzDate, day) = Self.timestamps(date)
        var all = headers
        all.append(("x-amz-date", amzDate))
        all.append(("x-amz-content-sha256", payloadHash))
        if let sessionToken { all.append(("x-amz-security-token", sessionToken)) }
        var toSign = all
        if !toSign.contains(where: { $0.0.lowercased() == "host" }) { toSign.append(("host", Self.hostHeader(url))) }
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(toSign)
        let canonical = [method, Self.canonicalURI(url), Self.canonicalQuery(url), canonicalHeaders, signedHeaders, payloadHash].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let signature = self.signature(canonicalRequest: canonical, amzDate: amzDate, day: day, scope: scope)
        all.append(("Authorization", "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope),SignedHeaders=\(signedHeaders),Signature=\(signature)"))
        return all
    }

    /// A presigned URL (query-string authentication) valid for `expires` seconds. `headers`
    /// are signed too: the request must send them as they are (`Content-MD5` and
    /// `x-amz-checksum-sha256` bind an upload's bytes to the URL).
    public func presign(method: String = "GET", url: URL, expires: Int, headers: [(String, String)] = [], date: Date = Date()) -> URL {
        let (amzDate, day) = Self.timestamps(date)
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(headers + [("host", Self.hostHeader(url))])
        var items = Self.queryItems(url)
        items.append(("X-Amz-Algorithm", "AWS4-HMAC-SHA256"))
        items.append(("X-Amz-Credential", "\(accessKeyID)/\(scope)"))
        items.append(("X-Amz-Date", amzDate))
        items.append(("X-Amz-Expires", String(expires)))
        if let sessionToken { items.append(("X-Amz-Security-Token", sessionToken)) }
        items.append(("X-Amz-SignedHeaders", signedHeaders))
        let query = Self.encodeQuery(items)
        let canonical = [method, Self.canonicalURI(url), query, canonicalHeaders, signedHeaders, Self.unsignedPayload].joined(separator: "\n")
        let signature = self.signature(canonicalRequest: canonical, amzDate: amzDate, day: day, scope: scope)
        var base = url.absoluteString
        if let q = base.firstIndex(of: "?") { base = String(base[..<q]) }
        return URL(string: base + "?" + query + "&X-Amz-Signature=" + signature)!
    }

    // MARK: Steps

    private func signature(canonicalRequest: String, amzDate: String, day: String, scope: String) -> String {
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, SHA256Hex.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return SHA256Hex.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
    }

    /// `20261127T093512Z` and `20261127`, UTC: the digits of Courier's own date text
    /// (`DatabaseDate`, plain arithmetic), since a `DateFormatter` would load ICU's tables
    /// (about 5 MiB resident) into every upload.
    static func timestamps(_ date: Date) -> (String, String) {
        let digits = DatabaseDate.text(date).prefix(19).filter(\.isNumber)   // yyyy-MM-dd HH:mm:ss
        let day = String(digits.prefix(8))
        return (day + "T" + digits.dropFirst(8) + "Z", day)
    }

    static func hostHeader(_ url: URL) -> String {
        let host = url.host ?? ""
        if let port = url.port, !((url.scheme == "http" && port == 80) || (url.scheme == "https" && port == 443)) { return "\(host):\(port)" }
        return host
    }

    /// Each path segment URI-encoded once (S3 does not double-encode).
    static func canonicalURI(_ url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "/"
        let decoded = path.isEmpty ? "/" : path
        return decoded.split(separator: "/", omittingEmptySubsequences: false)
            .map { uriEncode(String($0).removingPercentEncoding ?? String($0)) }
            .joined(separator: "/")
    }

    static func queryItems(_ url: URL) -> [(String, String)] {
        guard let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery, !query.isEmpty else { return [] }
        return query.split(separator: "&").map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let k = String(kv[0]).removingPercentEncoding ?? String(kv[0])
            let v = kv.count > 1 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
            return (k, v)
        }
    }

    static func canonicalQuery(_ url: URL) -> String { encodeQuery(queryItems(url)) }

    static func encodeQuery(_ items: [(String, String)]) -> String {
        let encoded: [(key: String, value: String)] = items.map { (key: uriEncode($0.0), value: uriEncode($0.1)) }
        let sorted = encoded.sorted { a, b in a.key == b.key ? a.value < b.value : a.key < b.key }
        return sorted.map { pair in pair.key + "=" + pair.value }.joined(separator: "&")
    }

    static func canonicalHeaders(_ headers: [(String, String)]) -> (String, String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            let collapsed = value.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            merged[name.lowercased(), default: []].append(collapsed)
        }
        let names = merged.keys.sorted()
        let canonical = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        return (canonical, names.joined(separator: ";"))
    }

    /// RFC 3986 unreserved characters stay; everything else is %XX (uppercase).
    static func uriEncode(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            if isUnreserved(byte) {
                out.append(Character(Unicode.Scalar(byte)))
            } else {
                out += "%" + String(Self.hexDigits[Int(byte >> 4)]) + String(Self.hexDigits[Int(byte & 15)])
            }
        }
        return out
    }

    private static let hexDigits = Array("0123456789ABCDEF")
    private static let unreserved: Set<UInt8> = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool { unreserved.contains(byte) }

}
