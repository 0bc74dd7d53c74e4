import Foundation

/// A list of downloads in aria2's input-file format, for `courier get -i FILE`.
///
/// ```
/// # a comment
/// https://example.com/a.iso
///   out=images/a.iso
///   sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// https://example.com/b.bin
///   checksum=sha-256=…
///   dir=other
/// ```
///
/// A line that starts a URL begins an entry; indented `key=value` lines below it are its
/// options: `out` (the file name, relative to `dir` or the output directory), `dir`,
/// `sha256`, and `checksum=sha-256=HEX` as aria2 writes it. Several tab-separated URLs on
/// one line are mirrors in aria2; Courier takes the first. Unknown options are refused so a
/// typo is not silently ignored; aria2 options that do not change the bytes
/// (`max-connection-per-server`, `split`, …) are accepted and ignored.
public struct InputList: Sendable, Equatable {
    /// One download of the list.
    public struct Entry: Sendable, Equatable {
        /// The URL to download, as the list wrote it.
        public var url: String
        /// The output name, relative (validated), when the list gave one.
        public var out: String?
        /// A directory, relative (validated), when the list gave one.
        public var dir: String?
        /// Lowercase hex.
        public var sha256: String?
        /// The entry's first line, for error messages.
        public var line: Int

        /// The path relative to the output directory: `dir/out`, else `dir/<name from the URL>`.
        public var relativePath: String {
            let name = out ?? SafePath.sanitizedFileName(URL(string: url)?.lastPathComponent ?? "", fallback: "index.html")
            let cleanName = name == "/" ? "index.html" : name
            return dir.map { $0 + "/" + cleanName } ?? cleanName
        }
    }

    /// The downloads, in the list's order.
    public var entries: [Entry]

    /// aria2 options that Courier accepts and ignores: they tune aria2's transfer, not the result.
    static let ignoredOptions: Set<String> = ["max-connection-per-server", "split", "min-split-size", "continue",
                                              "allow-overwrite", "auto-file-renaming", "user-agent", "referer"]

    /// Parses a list; every problem is an ``CourierError/Code/invalidArgument`` naming its line.
    public init(parsing text: String) throws {
        var entries: [Entry] = []
        var lineNumber = 0
        // "\r\n" is one Character (and a newline), so CRLF lists split as LF ones do.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indented = line.first == " " || line.first == "\t"
            if !indented {
                let first = String(trimmed.split(separator: "\t").first ?? "").trimmingCharacters(in: .whitespaces)
                do {
                    _ = try URLPolicy.validate(first)
                } catch let e as CourierError {
                    throw CourierError(.invalidArgument, "line \(lineNumber): \(e.message)")
                }
                entries.append(Entry(url: first, line: lineNumber))
                continue
            }
            guard !entries.isEmpty else {
                throw CourierError(.invalidArgument, "line \(lineNumber): an option before any URL")
            }
            guard let eq = trimmed.firstIndex(of: "=") else {
                throw CourierError(.invalidArgument, "line \(lineNumber): expected key=value, got \(trimmed.prefix(60).debugDescription)")
            }
            let key = trimmed[..<eq].lowercased()
            let value = String(trimmed[trimmed.index(after: eq)...])
            switch key {
            case "out":
                entries[entries.count - 1].out = try Self.relative(value, line: lineNumber)
            case "dir":
                entries[entries.count - 1].dir = try Self.relative(value, line: lineNumber)
            case "sha256":
                entries[entries.count - 1].sha256 = try Self.hex(value, line: lineNumber)
            case "checksum":
                let parts = value.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, ["sha-256", "sha256"].contains(parts[0].lowercased()) else {
                    throw CourierError(.invalidArgument, "line \(lineNumber): only checksum=sha-256=HEX is supported")
                }
                entries[entries.count - 1].sha256 = try Self.hex(String(parts[1]), line: lineNumber)
            default:
                guard Self.ignoredOptions.contains(key) else {
                    throw CourierError(.invalidArgument, "line \(lineNumber): unknown option \(key.prefix(40).debugDescription)")
                }
            }
        }
        self.entries = entries
    }

    private static func relative(_ value: String, line: Int) throws -> String {
        do { return try SafePath.validateRelative(value) } catch let e as CourierError {
            throw CourierError(.invalidPath, "line \(line): \(e.message)")
        }
    }

    private static func hex(_ value: String, line: Int) throws -> String {
        do { return try SHA256Hex.validate(value) } catch let e as CourierError {
            throw CourierError(.invalidArgument, "line \(line): \(e.message)")
        }
    }
}
