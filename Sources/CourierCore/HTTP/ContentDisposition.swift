import Foundation

/// The file name a `Content-Disposition` header suggests (RFC 6266), with RFC 8187's
/// `filename*=UTF-8''…` form preferred over plain `filename=`.
///
/// The name is returned as the server sent it, decoded; pass it through
/// ``SafePath/sanitizedFileName(_:fallback:)`` before using it: a hostile server may send
/// `../../etc/passwd`.
public struct ContentDisposition: Equatable, Sendable {
    /// `attachment`, `inline`, or another disposition type, lowercased.
    public let type: String
    /// The suggested file name, decoded, when there is one.
    public let fileName: String?

    /// Parses the header. Throws ``CourierError/Code/malformedHeader`` when there is no
    /// disposition type or a parameter is not `name=value`.
    public init(parsing value: String) throws {
        guard value.utf8.count <= 4096 else { throw Self.malformed(value) }
        let params = try Self.splitParameters(value)
        guard let first = params.first, !first.isEmpty, !first.contains("="), Self.isToken(first) else {
            throw Self.malformed(value)
        }
        type = first.lowercased()
        var plain: String?
        var extended: String?
        for raw in params.dropFirst() {
            guard let eq = raw.firstIndex(of: "=") else { throw Self.malformed(value) }
            let name = raw[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            let rawValue = raw[raw.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "filename":
                plain = try Self.unquote(rawValue, original: value)
            case "filename*":
                extended = Self.decodeExtended(rawValue)
            default:
                continue
            }
        }
        fileName = extended ?? plain
    }

    /// Splits on `;` outside quoted strings.
    private static func splitParameters(_ value: String) throws -> [String] {
        var parts: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        for ch in value {
            if escaped { current.append(ch); escaped = false; continue }
            if inQuotes, ch == "\\" { current.append(ch); escaped = true; continue }
            if ch == "\"" { inQuotes.toggle() }
            if ch == ";", !inQuotes {
                parts.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(ch)
            }
        }
        if inQuotes { throw malformed(value) }
        parts.append(current.trimmingCharacters(in: .whitespaces))
        return parts.filter { !$0.isEmpty || parts.count == 1 }
    }

    private static func unquote(_ text: String, original: String) throws -> String {
        guard text.hasPrefix("\"") else {
            guard !text.isEmpty else { throw malformed(original) }
            return text
        }
        guard text.count >= 2, text.hasSuffix("\"") else { throw malformed(original) }
        var out = ""
        var escaped = false
        for ch in text.dropFirst().dropLast() {
            if escaped { out.append(ch); escaped = false } else if ch == "\\" { escaped = true } else { out.append(ch) }
        }
        return out
    }

    /// `UTF-8''na%C3%AFve.txt` → `naïve.txt`; `nil` for other charsets or bad encoding.
    private static func decodeExtended(_ text: String) -> String? {
        let parts = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        guard charset == "utf-8" || charset == "iso-8859-1" else { return nil }
        let encoded = String(parts[2])
        if charset == "utf-8" { return encoded.removingPercentEncoding }
        // ISO-8859-1: decode bytes then map each to its Unicode scalar.
        guard let bytes = percentDecodedBytes(encoded) else { return nil }
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    private static func percentDecodedBytes(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        var it = Array(s.utf8).makeIterator()
        while let b = it.next() {
            if b == UInt8(ascii: "%") {
                guard let h = it.next(), let l = it.next(), let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else { return nil }
                out.append(v)
            } else {
                out.append(b)
            }
        }
        return out
    }

    private static func isToken(_ s: String) -> Bool {
        s.utf8.allSatisfy { b in
            b > 0x20 && b < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains(b)
        }
    }

    private static func malformed(_ value: String) -> CourierError {
        CourierError(.malformedHeader, "malformed Content-Disposition: \(value.prefix(80).debugDescription)")
    }
}
