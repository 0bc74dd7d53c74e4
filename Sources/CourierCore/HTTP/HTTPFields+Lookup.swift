import HTTPTypes

/// The few lookups Courier's rules make of a reply's headers, by name as the rules spell
/// them. `package`, so an app's own `HTTPFields` API is not widened.
extension HTTPFields {
    /// Fields from name/value pairs; a name that is not an HTTP token is refused with
    /// `E_INVALID_ARGUMENT`. A value's CR, LF or NUL cannot be sent: it is refused too.
    package init(validating pairs: [(name: String, value: String)]) throws {
        self.init()
        for (name, value) in pairs {
            guard let field = HTTPField.Name(name) else {
                throw CourierError(.invalidArgument, "\(name.debugDescription) is not an HTTP header name")
            }
            // By scalars: "\r\n" is one Character, equal to neither "\r" nor "\n".
            guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw CourierError(.invalidArgument, "the value of the \(name) header holds a line break or NUL")
            }
            append(HTTPField(name: field, value: value))
        }
    }

    /// A `Name: value` line a person typed (`-H`, `--header`) as a pair, by the same rule:
    /// no colon, a name that is not a token, or a line break in the value (which would
    /// smuggle a second header into the request) is `E_INVALID_ARGUMENT`.
    package static func headerLine(_ line: String) throws -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: ":") else {
            throw CourierError(.invalidArgument, "a header is \"Name: value\", not \(line.debugDescription)")
        }
        let pair = (name: line[..<colon].trimmingCharacters(in: .whitespaces), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        _ = try HTTPFields(validating: [pair])
        return pair
    }

    /// Fields from pairs whose names are known to be valid (the package's own); an invalid
    /// one is skipped.
    package init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs {
            if let field = HTTPField.Name(name) { append(HTTPField(name: field, value: value)) }
        }
    }

    /// The first value of the header `name` (case-insensitive), as HTTP/1.1's `first(name:)`.
    package func first(name: String) -> String? {
        HTTPField.Name(name).flatMap { self[fields: $0].first?.value }
    }

    /// Every value of `name`, comma-separated lists split and trimmed.
    package subscript(canonicalForm name: String) -> [Substring] {
        guard let field = HTTPField.Name(name) else { return [] }
        return self[fields: field].flatMap { $0.value.split(separator: ",").map { Substring(String($0).trimmingHTTPWhitespace()) } }
    }

    /// The fields as name/value pairs, in order.
    package var pairs: [(name: String, value: String)] { map { ($0.name.rawName, $0.value) } }
}
