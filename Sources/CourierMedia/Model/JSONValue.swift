import Foundation

/// Any JSON value, kept as the server sent it: what Courier does not model of an item
/// still reaches `metadata.json` and the app (``MediaItem/extraFields``).
public enum JSONValue: Codable, Sendable, Equatable, Hashable {
    /// JSON's `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A whole number (kept exact: `RunTimeTicks` exceeds what a Double holds exactly).
    case integer(Int64)
    /// A number with a fraction or an exponent.
    case number(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object (its keys' order is not kept).
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let v = try? c.decode(Bool.self) { self = .bool(v) }   // not a Bool: the next type is tried
        else if let v = try? c.decode(Int64.self) { self = .integer(v) }   // not a whole number: the next type is tried
        else if let v = try? c.decode(Double.self) { self = .number(v) }   // not a number: the next type is tried
        else if let v = try? c.decode(String.self) { self = .string(v) }   // not a string: the next type is tried
        else if let v = try? c.decode([JSONValue].self) { self = .array(v) }   // not an array: the last type is tried
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case let .bool(v): try c.encode(v)
        case let .integer(v): try c.encode(v)
        case let .number(v): try c.encode(v)
        case let .string(v): try c.encode(v)
        case let .array(v): try c.encode(v)
        case let .object(v): try c.encode(v)
        }
    }

    /// The string, for a string value.
    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
}

/// A JSON object key of any name: how the media model reads every field of a server's
/// object, the modelled ones by name and the rest into `extraFields`.
struct AnyKey: CodingKey, ExpressibleByStringLiteral {
    let stringValue: String
    init(stringValue: String) { self.stringValue = stringValue }
    init(stringLiteral value: String) { stringValue = value }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer where K == AnyKey {
    /// Every field whose name is not in `modelled`, as sent, and the modelled ones sent as
    /// `null` (kept as `null`, so the object is written back as the server sent it).
    func extraFields(besides modelled: Set<String>) throws -> [String: JSONValue] {
        var extra: [String: JSONValue] = [:]
        for key in allKeys {
            if !modelled.contains(key.stringValue) { extra[key.stringValue] = try decode(JSONValue.self, forKey: key) }
            else if try decodeNil(forKey: key) { extra[key.stringValue] = .null }
        }
        return extra
    }
}

extension KeyedEncodingContainer where K == AnyKey {
    /// Writes the fields Courier does not model first; the modelled ones follow.
    mutating func encode(extraFields: [String: JSONValue]) throws {
        for (name, value) in extraFields { try encode(value, forKey: AnyKey(stringValue: name)) }
    }
}
