/// A parsed `Content-Range` header (RFC 9110 §14.4), bytes unit only.
///
/// `bytes 0-499/1234` → `.satisfied(first: 0, last: 499, complete: 1234)`;
/// `bytes 0-499/*` → complete length unknown; `bytes */1234` → `.unsatisfied(complete: 1234)`,
/// the form a 416 carries.
public enum ContentRange: Equatable, Sendable {
    /// A range of bytes that the body holds: `first...last`, of a representation of `complete` bytes.
    case satisfied(first: Int64, last: Int64, complete: Int64?)
    /// No range was satisfiable; the representation is `complete` bytes long.
    case unsatisfied(complete: Int64)

    /// Parses the header's value. Throws ``CourierError/Code/malformedHeader`` on anything
    /// that is not a well-formed single bytes range: other units, `last < first`,
    /// `last >= complete`, negative or overflowing numbers.
    public init(parsing value: String) throws {
        let trimmed = value.trimmingHTTPWhitespace()
        guard trimmed.count <= 256 else { throw Self.malformed(value) }
        let utf8 = Array(trimmed.utf8)
        // Unit "bytes" followed by one or more spaces.
        guard utf8.count > 6, String(decoding: utf8[0..<5], as: UTF8.self).lowercased() == "bytes", utf8[5] == UInt8(ascii: " ") else {
            throw Self.malformed(value)
        }
        let rest = String(decoding: utf8[6...], as: UTF8.self).trimmingHTTPWhitespace()
        let halves = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { throw Self.malformed(value) }
        let rangePart = String(halves[0]), completePart = String(halves[1])
        if rangePart == "*" {
            guard let complete = HTTPNumber.parse(completePart) else { throw Self.malformed(value) }
            self = .unsatisfied(complete: complete)
            return
        }
        let bounds = rangePart.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = HTTPNumber.parse(String(bounds[0])), let last = HTTPNumber.parse(String(bounds[1])), first <= last else {
            throw Self.malformed(value)
        }
        if completePart == "*" {
            self = .satisfied(first: first, last: last, complete: nil)
            return
        }
        guard let complete = HTTPNumber.parse(completePart), last < complete else { throw Self.malformed(value) }
        self = .satisfied(first: first, last: last, complete: complete)
    }

    /// The number of bytes the range covers, for a satisfied range.
    public var length: Int64? {
        if case let .satisfied(first, last, _) = self { return last - first + 1 }
        return nil
    }

    /// The complete length, when the server said it.
    public var completeLength: Int64? {
        switch self {
        case let .satisfied(_, _, complete): return complete
        case let .unsatisfied(complete): return complete
        }
    }

    private static func malformed(_ value: String) -> CourierError {
        CourierError(.malformedHeader, "malformed Content-Range: \(value.prefix(80).debugDescription)")
    }
}

/// Strict parsing of the non-negative decimal numbers HTTP headers carry.
enum HTTPNumber {
    /// Digits only (no sign, no spaces), at most 18 of them so the value fits in Int64.
    static func parse(_ text: String) -> Int64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

extension String {
    /// Removes leading and trailing spaces and tabs (HTTP's optional white space).
    func trimmingHTTPWhitespace() -> String {
        var scalars = Substring(self)
        while let f = scalars.first, f == " " || f == "\t" { scalars.removeFirst() }
        while let l = scalars.last, l == " " || l == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
