/// A SHA-256 given as text: 64 hexadecimal digits, stored lowercase.
package enum SHA256Hex {
    package static func validate(_ text: String) throws -> String {
        let lower = text.lowercased()
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw CourierError(.invalidArgument, "a SHA-256 is 64 hexadecimal digits")
        }
        return lower
    }
}
