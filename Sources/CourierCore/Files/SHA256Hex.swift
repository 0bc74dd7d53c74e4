import Crypto
import Foundation
/// A SHA-256 given as text: 64 hexadecimal digits, stored lowercase.
package enum SHA256Hex {
    /// Bytes (a digest) as lowercase hex: the one hex encoder of the package.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0x0f)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// A short, stable id for a text (a path, a key): `prefix` and the first `bytes` bytes
    /// of its SHA-256 in hex. Safe as a download id.
    package static func shortID(_ prefix: String, of text: String, bytes: Int = 12) -> String {
        prefix + hex(SHA256.hash(data: Data(text.utf8)).prefix(bytes))
    }

    package static func validate(_ text: String) throws -> String {
        let lower = text.lowercased()
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw CourierError(.invalidArgument, "a SHA-256 is 64 hexadecimal digits")
        }
        return lower
    }
}
