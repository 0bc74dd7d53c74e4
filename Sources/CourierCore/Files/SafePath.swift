/// Rules for names and paths that come from outside (callers, servers, the command line).
public enum SafePath {
    /// Validates a path meant to be relative to a root directory and returns it normalized
    /// (single slashes, no `.` components). Throws ``CourierError/Code/invalidPath`` for an
    /// absolute path, a `..` component, a NUL byte, an empty path or an over-long one.
    public static func validateRelative(_ path: String) throws -> String {
        guard !path.isEmpty, path.utf8.count <= 4096 else {
            throw CourierError(.invalidPath, "a path must have 1 to 4096 bytes")
        }
        guard !path.hasPrefix("/") else {
            throw CourierError(.invalidPath, "the path \(path.debugDescription) must be relative to the root directory")
        }
        guard !path.utf8.contains(0) else {
            throw CourierError(.invalidPath, "the path holds a NUL byte")
        }
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            guard part != ".." else {
                throw CourierError(.invalidPath, "the path \(path.debugDescription) climbs out of the root directory")
            }
            guard part.utf8.count <= 255 else {
                throw CourierError(.invalidPath, "a path component is longer than 255 bytes")
            }
            parts.append(part)
        }
        guard !parts.isEmpty else { throw CourierError(.invalidPath, "the path \(path.debugDescription) names no file") }
        return parts.joined(separator: "/")
    }

    /// Validates a download id: 1 to 200 bytes of letters, digits and `._:-`, not `.` or `..`.
    public static func validateIdentifier(_ id: String) throws -> String {
        guard !id.isEmpty, id.utf8.count <= 200, id != ".", id != "..",
              id.utf8.allSatisfy({ b in
                  (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                      || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ":")
              })
        else {
            throw CourierError(.invalidArgument, "an id must be 1 to 200 letters, digits or ._:- (got \(String(id.prefix(60)).debugDescription))")
        }
        return id
    }

    /// Turns a name suggested from outside (a URL's last path component, a
    /// Content-Disposition file name) into one safe file name: the last component only,
    /// no control characters, no leading dots; `fallback` when nothing usable is left.
    public static func sanitizedFileName(_ name: String, fallback: String = "download") -> String {
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var cleaned = String(String.UnicodeScalarView(last.unicodeScalars.filter { scalar in
            scalar.value >= 0x20 && scalar.value != 0x7F && !(0x80...0x9F).contains(scalar.value)
        }))
        while cleaned.hasPrefix(".") { cleaned.removeFirst() }
        cleaned = cleaned.trimmingHTTPWhitespace()
        while cleaned.utf8.count > 255 { cleaned.removeLast() }
        return cleaned.isEmpty ? fallback : cleaned
    }
}
