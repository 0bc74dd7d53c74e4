import Foundation
import Testing

/// Standard output that cannot take a result: its reader gone (`| head`, `| true`), or a full
/// disk behind it (`> /dev/full`). Every command ends with a code (141 quietly, as SIGPIPE
/// ends a process, or the disk's code in words), never a crash with a backtrace, and what it
/// saved stays saved. (It crashed in both: `FileHandle.write(_:)` traps on a failed write.)
@Suite struct OutputCLITests {
    /// Runs `courier args` in bash with its stdout sent to `redirect` (a pipe or a file);
    /// the status is courier's own.
    static func courier(_ args: [String], stdout redirect: String) async throws -> CLITests.Result {
        try await CLITests.run(["-c", "\"$@\" \(redirect); exit ${PIPESTATUS[0]}", "courier-test", CLITests.binary] + args, executable: "/bin/bash")
    }

    static func expectNoCrash(_ r: CLITests.Result, _ what: String) {
        #expect(!r.stderr.contains("Fatal error") && !r.stderr.contains("crashed") && !r.stderr.contains("Error Domain"), "\(what): \(r.stderr.prefix(1500))")
    }

    @Test func aReaderThatWentAwayEndsTheCommandQuietlyWith141() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 300_000)
        let target = w.out.appendingPathComponent("f.bin")
        // `| true` has exited long before the download ends and courier prints where the file is.
        let get = try await Self.courier(["get", "-q", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db], stdout: "| true")
        #expect(get.status == 141 && get.stderr.isEmpty, "get: \(get.status) \(get.stderr.prefix(1500))")
        Self.expectNoCrash(get, "get")
        #expect(try Data(contentsOf: target) == data)
        let list = try await Self.courier(["list", "--db", w.db], stdout: "| true")
        #expect(list.status == 141 && list.stderr.isEmpty, "list: \(list.status) \(list.stderr.prefix(1500))")
        let json = try await Self.courier(["list", "--json", "--db", w.db], stdout: "| true")
        #expect(json.status == 141, "list --json: \(json.status) \(json.stderr.prefix(1500))")
        // The download was recorded before its line went nowhere: the same command has nothing to fetch.
        w.origin.clearRequests()
        let again = try await CLITests.run(["get", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db])
        #expect(again.status == 0 && w.origin.requests.filter { $0.path == "/f.bin" && $0.status == 200 }.isEmpty, "\(again.stderr)")
    }

    @Test func aFullDiskBehindStdoutEndsTheCommandWithItsCode() async throws {
        guard FileManager.default.isWritableFile(atPath: "/dev/full") else { return print("skipped: no /dev/full here") }
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 300_000)
        let target = w.out.appendingPathComponent("f.bin")
        let get = try await Self.courier(["get", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db], stdout: "> /dev/full")
        #expect(get.status == 5 && get.stderr.contains("E_NO_SPACE") && get.stderr.contains("stdout"), "get: \(get.status) \(get.stderr.prefix(1500))")
        Self.expectNoCrash(get, "get")
        #expect(try Data(contentsOf: target) == data)
    }
}
