import Courier
import Foundation
import Testing
@testable import CourierCLI

/// Numbers and inputs that used to trap instead of ending with a code: a server's absurd
/// total (the time remaining past `Int`), a timeout flag past `Int64`'s nanoseconds, and
/// standard input that cannot be read for `get -i -`.
@Suite struct HostileInputCLITests {
    @Test func anAbsurdTimeRemainingIsShownAsUnknown() {
        #expect(Format.duration(59) == "59s" && Format.duration(3_600) == "1h00m")
        #expect(Format.duration(1e19) == "--" && Format.duration(.infinity) == "--" && Format.duration(-1) == "--")
        // A reply that claims 10^18 bytes, one byte a second in: the line still renders.
        let p = DownloadProgress(id: "x", bytesReceived: 1, totalBytes: 999_999_999_999_999_999, bytesPerSecond: 0.1, secondsRemaining: 1e19)
        #expect(ProgressLine.render(label: "f.bin", progress: p, width: 80).contains("ETA --"))
    }

    @Test func aTimeoutPastADayIsAUsageError() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        for flag in ["--connect-timeout", "--idle-timeout"] {
            let r = try await CLITests.run(["get", "--db", w.db, flag, "10000000000", "-o", w.out.appendingPathComponent("t.bin").path, w.origin.url("/t.bin")])
            #expect(r.status == 64 && r.stderr.contains(flag) && !r.stderr.contains("Fatal error"), "\(flag): \(r.status) \(r.stderr.prefix(800))")
        }
    }

    /// `courier get -i -` with standard input a folder (EISDIR) or closed (EBADF).
    @Test(arguments: ["< /", "<&-"]) func unreadableStandardInputIsAFileError(_ redirect: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let r = try await CLITests.run(["-c", "\"$@\" \(redirect)", "courier-test", CLITests.binary, "get", "-i", "-", "--db", w.db], executable: "/bin/bash")
        #expect(r.status == 5 && r.stderr.contains("E_FNF") && r.stderr.contains("standard input") && !r.stderr.contains("Fatal error"),
                "\(redirect): \(r.status) \(r.stderr.prefix(800))")
    }
}
