
import Foundation

/// What a tus 1.0 server's headers say (pure): the parsing is strict, because an offset
/// read wrong is a file assembled wrong.
public enum TusHeaders {
    /// The protocol version this client speaks (`Tus-Resumable`).
    public static let version = "1.0.0"

    /// `Upload-Offset`: a non-negative decimal integer, nothing else (no sign, no spaces
    /// inside, no exponent); `E_MALFORMED_HEADER` otherwise, `E_PROTOCOL` when it is missing.
    public static func offset(_ value: String?) throws -> Int64 {
        guard let value else { throw CourierError(.protocolViolation, "the tus server's reply has no Upload-Offset") }
        return try integer(value, "Upload-Offset")
    }

    /// `Upload-Length`, when present (a deferred length has none).
    public static func length(_ value: String?) throws -> Int64? {
        try value.map { try integer($0, "Upload-Length") }
    }

    /// The upload URL of a creation reply's `Location`, resolved against the URL the POST
    /// went to; only http(s), and never a URL with credentials in it.
    public static func location(_ value: String?, relativeTo base: URL) throws -> URL {
        let trimmed = value?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !trimmed.isEmpty else { throw CourierError(.protocolViolation, "the tus server created an upload without a Location") }
        guard let url = URL(string: trimmed, relativeTo: base)?.absoluteURL, let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", url.host != nil, url.user == nil, url.password == nil else {
            throw CourierError(.malformedHeader, "the tus server's Location is not an upload URL: \(trimmed.prefix(200))")
        }
        return url
    }

    /// `Tus-Extension` (comma-separated, case kept as the spec's names are lowercase).
    public static func extensions(_ value: String?) -> Set<String> {
        Set(list(value))
    }

    /// `Tus-Checksum-Algorithm`, lowercased, in the server's order.
    public static func checksumAlgorithms(_ value: String?) -> [String] {
        list(value).map { $0.lowercased() }
    }

    /// Whether a reply speaks tus 1.0 (`Tus-Resumable: 1.0.0`).
    public static func speaksVersion(_ value: String?) -> Bool {
        value?.trimmingCharacters(in: .whitespaces) == version
    }

    /// `Upload-Metadata`: `key base64(value)` pairs, comma-separated; keys with no space or
    /// comma, sorted so the header is the same each run.
    public static func metadata(_ pairs: [String: String]) -> String {
        pairs.filter { !$0.key.isEmpty && !$0.key.contains(where: { $0 == " " || $0 == "," }) }
            .sorted { $0.key < $1.key }
            .map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }
            .joined(separator: ",")
    }

    private static func integer(_ value: String, _ name: String) throws -> Int64 {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int64(text) else {
            throw CourierError(.malformedHeader, "the tus server's \(name) is not a byte count: \(value.prefix(40))")
        }
        return number
    }

    private static func list(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// What to do after a tus `PATCH` (pure), given the offset it was sent from and its length.
public enum TusPatchOutcome: Equatable, Sendable {
    /// The server holds the file up to this offset.
    case confirmed(Int64)
    /// The server's offset is not ours (409): ask it with `HEAD` and go on from there.
    case askOffset
    /// The upload is gone on the server (404, 410): start a new one.
    case recreate
    /// The chunk arrived damaged (460 Checksum Mismatch): send it again.
    case resend
    /// A passing trouble (5xx, 408, 423, 429): back off, ask the offset, go on.
    case retry
    /// Anything else stands: the upload fails with this status.
    case fail(Int)

    /// Judges a reply. A 204 must carry an offset inside what was sent (never behind the
    /// start, never past the end): anything else is `E_PROTOCOL`, not a guess.
    public static func judge(status: Int, offsetHeader: String?, sentFrom start: Int64, length: Int64) throws -> TusPatchOutcome {
        switch status {
        case 200, 204:
            let offset = try TusHeaders.offset(offsetHeader)
            guard offset >= start, offset <= start + length else {
                throw CourierError(.protocolViolation, "the tus server answered Upload-Offset \(offset) to \(length) bytes sent from \(start)")
            }
            return .confirmed(offset)
        case 409: return .askOffset
        case 404, 410: return .recreate
        case 460: return .resend
        case 408, 423, 429, 500...599: return .retry   // 423: a killed run's request still holds the upload
        default: return .fail(status)
        }
    }
}
