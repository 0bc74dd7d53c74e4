import CourierTestSupport
import Foundation
import Testing

/// Every `courier` command line in README.md and the DocC articles parses as written (placeholders filled in,
/// with and without its optional parts), and the main job runs: a README that lies is a bug.
@Suite struct ReadmeCommandsTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The README and every DocC article (the command-line manual lives in one).
    static func documents() throws -> [URL] {
        var found = [package.appendingPathComponent("README.md")]
        let sources = package.appendingPathComponent("Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let catalog = sources.appendingPathComponent(module).appendingPathComponent("\(module).docc")
            guard let files = try? FileManager.default.contentsOfDirectory(atPath: catalog.path) else { continue }   // a module without a catalog
            found += files.filter { $0.hasSuffix(".md") }.sorted().map { catalog.appendingPathComponent($0) }
        }
        return found
    }

    /// Placeholder → a value of the right shape.
    static let values: [String: String] = [
        "URL": "http://127.0.0.1:1/file.bin", "URL2": "http://127.0.0.1:1/other.bin", "PATH": "/tmp/courier-readme/out.bin",
        "HEX": String(repeating: "ab", count: 32), "ID": "job1", "TOKEN": "t0k3n", "DIR": "/tmp/courier-readme",
        "P": "notes/a.txt", "FILE": "/tmp/courier-readme/file", "N": "2", "ITEM_ID": "abc123", "…": "x",
    ]

    /// The `courier …` lines of the documents' sh blocks, as argument lists (comments dropped,
    /// continuations joined), each with its optional `[…]` parts and without them.
    static func commandLines() throws -> [[String]] {
        let text = try documents().map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
        var lines: [String] = [], inShell = false, pending = ""
        for raw in text.components(separatedBy: "\n") {
            if raw.hasPrefix("```") { inShell = raw == "```sh"; continue }
            guard inShell else { continue }
            var line = pending + raw
            pending = ""
            if line.hasSuffix("\\") { pending = String(line.dropLast()) + " "; continue }
            if let comment = line.range(of: " # ") { line = String(line[..<comment.lowerBound]) }
            line = line.trimmingCharacters(in: .whitespaces)
            if let start = line.range(of: "courier ") ?? (line == "courier" ? line.range(of: "courier") : nil),
               line[..<start.lowerBound].allSatisfy({ $0 != " " }) || line.hasPrefix("JELLYFIN_TOKEN") {
                lines.append(String(line[start.lowerBound...]))
            }
        }
        var out: [[String]] = []
        for line in lines {
            let words = split(line)
            out.append(words.filter { $0 != "[" && $0 != "]" }.map(fill))                    // with every optional part
            var withoutOptional: [String] = [], depth = 0
            for w in words { if w == "[" { depth += 1 } else if w == "]" { depth -= 1 } else if depth == 0 { withoutOptional.append(fill(w)) } }
            out.append(withoutOptional)
        }
        return out
    }

    /// Shell-like words, keeping quoted strings whole; `[` and `]` become words of their own.
    static func split(_ line: String) -> [String] {
        var words: [String] = [], word = "", quote: Character? = nil
        func flush() { if !word.isEmpty { words.append(word); word = "" } }
        for c in line {
            if let q = quote { if c == q { quote = nil } else { word.append(c) }; continue }
            switch c {
            case "\"", "'": quote = c
            case " ": flush()
            case "[", "]": flush(); words.append(String(c))
            default: word.append(c)
            }
        }
        flush()
        return Array(words.dropFirst())   // "courier"
    }

    static func fill(_ word: String) -> String {
        if let value = values[word] { return value }
        var w = word
        for (key, value) in values.sorted(by: { $0.key.count > $1.key.count }) where key.count > 1 {
            w = w.replacingOccurrences(of: key, with: value)
        }
        return w.replacingOccurrences(of: "~/", with: "/tmp/courier-readme/")
    }

    @Test func everyDocumentedCommandParses() async throws {
        let commands = try Self.commandLines()
        #expect(commands.count >= 40, "found \(commands.count) command lines")
        let failures = try await offThePool { try Self.parseFailures(commands) }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// The command lines `courier` does not parse, each run with COURIER_PARSE_ONLY (on a
    /// thread of its own: see ``offThePool(_:)``).
    static func parseFailures(_ commands: [[String]]) throws -> [String] {
        var failures: [String] = []
        for args in commands {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLITests.binary)
            p.arguments = args
            var env = ProcessInfo.processInfo.environment
            env["COURIER_PARSE_ONLY"] = "1"
            p.environment = env
            let err = Pipe()
            p.standardOutput = FileHandle.nullDevice
            p.standardError = err
            try p.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if p.terminationStatus != 0 { failures.append("courier \(args.joined(separator: " ")): \(text)") }
        }
        return failures
    }

    /// The README's first command: the offline demo, end to end (smaller, for time).
    @Test func theDemoRunsOffline() async throws {
        let r = try await CLITests.run(["demo", "--size-mib", "16", "--rate-mib", "32"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("OK:") && r.stdout.contains("SHA-256 verified"), "\(r.stdout)")
    }
}
