/// A parsed `ETag` (RFC 9110 §8.8.3): an opaque quoted string, weak when prefixed by `W/`.
public struct EntityTag: Equatable, Sendable, CustomStringConvertible {
    /// Whether the tag is weak (`W/"…"`). A weak tag must never be sent in `If-Range`.
    public let isWeak: Bool
    /// The quoted string without its quotes.
    public let opaque: String

    /// Parses an `ETag` value. Throws ``CourierError/Code/malformedHeader`` when it is not a
    /// quoted string (optionally `W/`-prefixed) of visible characters.
    ///
    /// Many servers send unquoted tags (`ETag: abc`); those are accepted as *weak*, since
    /// we cannot know what the server will compare them with, and a weak tag is never used
    /// to splice a resume.
    public init(parsing value: String) throws {
        let trimmed = value.trimmingHTTPWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 1024 else {
            throw CourierError(.malformedHeader, "malformed ETag: \(value.prefix(80).debugDescription)")
        }
        var rest = Substring(trimmed)
        var weak = false
        if rest.hasPrefix("W/") || rest.hasPrefix("w/") {
            weak = true
            rest = rest.dropFirst(2)
        }
        if rest.count >= 2, rest.first == "\"", rest.last == "\"" {
            let inner = rest.dropFirst().dropLast()
            guard inner.utf8.allSatisfy(Self.isETagCharacter) else {
                throw CourierError(.malformedHeader, "malformed ETag: \(value.prefix(80).debugDescription)")
            }
            self.isWeak = weak
            self.opaque = String(inner)
        } else {
            // Unquoted: lenient, but never strong.
            guard !rest.contains("\""), rest.utf8.allSatisfy(Self.isETagCharacter), !rest.isEmpty else {
                throw CourierError(.malformedHeader, "malformed ETag: \(value.prefix(80).debugDescription)")
            }
            self.isWeak = true
            self.opaque = String(rest)
        }
    }

    /// Makes a tag.
    public init(opaque: String, isWeak: Bool) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    /// The header form: `"abc"` or `W/"abc"`.
    public var description: String { (isWeak ? "W/" : "") + "\"" + opaque + "\"" }

    /// Strong comparison (RFC 9110 §8.8.3.2): both strong and the same characters.
    public func strongMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaque == other.opaque
    }

    // etagc = %x21 / %x23-7E / obs-text
    private static func isETagCharacter(_ byte: UInt8) -> Bool {
        byte == 0x21 || (byte >= 0x23 && byte <= 0x7E) || byte >= 0x80
    }
}
