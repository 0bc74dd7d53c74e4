import Crypto
import CourierOrigin
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests of the built `courier` binary, as a user runs it.
@Suite(.serialized) struct CLITests {
    /// The built binary: $COURIER_BIN, else .build/debug/courier beside this package.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["COURIER_BIN"] { return path }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return package.appendingPathComponent(".build/debug/courier").path
    }

    final class World: @unchecked Sendable { // one test at a time
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-cli-\(UUID().uuidString)")
        var served: URL { base.appendingPathComponent("served") }
        var out: URL { base.appendingPathComponent("out") }
        var db: String { base.appendingPathComponent("db/courier.sqlite").path }
        var origin: CourierOrigin!

        init() async throws {
            try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            origin = try await CourierOrigin.start(directory: served)
        }

        func close() async {
            try? await origin.stop()
            try? FileManager.default.removeItem(at: base)
        }

        func serve(_ name: String, size: Int) throws -> Data {
            var state: UInt64 = 88172645463325252
            var words = [UInt64](repeating: 0, count: size / 8 + 1)
            for i in words.indices { state ^= state << 13; state ^= state >> 7; state ^= state << 17; words[i] = state }
            let data = words.withUnsafeBytes { Data($0.prefix(size)) }
            try data.write(to: served.appendingPathComponent(name))
            return data
        }
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutData = Data()
    }

    /// Starts the binary; returns the process and its output pipes.
    static func launch(_ args: [String], cwd: URL? = nil, environment extra: [String: String] = [:], executable: String? = nil) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable ?? binary)
        p.arguments = args
        if let cwd { p.currentDirectoryURL = cwd }
        var env = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        env["TERM"] = "dumb"
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return (p, out, err)
    }

    /// Runs the binary to the end. The waiting happens on a Dispatch thread, never on
    /// Swift's cooperative pool: the origin these tests talk to runs in this process and
    /// needs those (two, on this machine) threads to answer the child we wait for.
    static func run(_ args: [String], cwd: URL? = nil, environment: [String: String] = [:], executable: String? = nil) async throws -> Result {
        let (p, out, err) = try launch(args, cwd: cwd, environment: environment, executable: executable)
        return await finish(p, out, err)
    }

    /// Collects a launched process's output and status on dedicated threads: never on the
    /// cooperative pool, and never on Dispatch's global queue, whose non-overcommitting
    /// pool (one thread per core here) deadlocks when several tests block on it at once.
    static func finish(_ p: Process, _ out: Pipe, _ err: Pipe) async -> Result {
        let result = await collect(p, out, err)
        expectNoBuildPath(result.stderr)   // here, in the test's own context
        return result
    }

    private static func collect(_ p: Process, _ out: Pipe, _ err: Pipe) async -> Result {
        await withCheckedContinuation { continuation in
            let stdout = DataBox()
            let done = DispatchSemaphore(value: 0)
            Thread { stdout.data = out.fileHandleForReading.readDataToEndOfFile(); done.signal() }.start()
            Thread {
                let e = err.fileHandleForReading.readDataToEndOfFile()
                done.wait()
                p.waitUntilExit()
                continuation.resume(returning: Result(status: p.terminationStatus, stdout: String(decoding: stdout.data, as: UTF8.self),
                                                      stderr: String(decoding: e, as: UTF8.self), stdoutData: stdout.data))
            }.start()
        }
    }

    /// Issue 28: no message of any command names a path of the machine that built it (a
    /// dependency's checkout, a source file and line): checked on every run of every CLI test.
    static func expectNoBuildPath(_ text: String) {
        let marks = text.contains("/checkouts/") || text.contains("/.build/") && text.contains("/Sources/")
            || text.range(of: #"\.(swift|cc|c|h):[0-9]+"#, options: .regularExpression) != nil
        #expect(!marks, "a message names a path of the build machine: \(text.prefix(2000))")
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    @Test func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary), "build the CLI first: swift build (scripts/test does)")
    }

    @Test func sigintPausesAndTheSameCommandResumesFromThePartial() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("big.bin", size: 24 << 20)
        var slow = Fault(); slow.stallAfterBytes = 8 << 20   // hangs at 8 MiB until Ctrl-C, however loaded the machine
        w.origin.setFault(slow, for: "/big.bin")
        let target = w.out.appendingPathComponent("big.bin")
        let args = ["get", w.origin.url("/big.bin"), "-o", target.path, "--sha256", Self.sha256(data), "--db", w.db]

        let (p, out, err) = try Self.launch(args)
        let partial = target.path + ".partial"
        let deadline = ContinuousClock.now + .seconds(30)
        func partialSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: partial))?[.size] as? Int) ?? 0 }
        while partialSize() < 6 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        kill(p.processIdentifier, SIGINT)
        let interruptedRun = await Self.finish(p, out, err)
        let errText = interruptedRun.stderr
        #expect(interruptedRun.status == 130, "stderr: \(errText)")
        #expect(errText.contains("Paused"))
        #expect(errText.contains("courier resume"))
        let kept = partialSize()
        #expect(kept > 0 && kept < data.count)
        #expect(!FileManager.default.fileExists(atPath: target.path))

        let status = try await Self.run(["list", "--json", "--db", w.db])
        #expect(status.status == 0)
        #expect(status.stdout.contains("\"state\" : \"paused\""))

        w.origin.setFault(nil, for: "/big.bin")
        w.origin.clearRequests()
        let second = try await Self.run(args)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stderr.contains("Resuming"))
        #expect(second.stdout.contains("SHA-256 verified"))
        let written = try Data(contentsOf: target)
        #expect(Self.sha256(written) == Self.sha256(data))
        // The second run did not start from zero.
        let first = try #require(w.origin.requests.first)
        #expect(first.range == "bytes=\(kept)-")
        #expect(first.status == 206)
        #expect(w.origin.requests.reduce(0) { $0 + $1.bodyBytesSent } == Int64(data.count - kept))
    }

    @Test func exitCodesTellFailuresApart() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 10_000)
        let notFound = try await Self.run(["get", w.origin.url("/missing.bin"), "-o", w.out.appendingPathComponent("m").path, "--db", w.db])
        #expect(notFound.status == 3)
        #expect(notFound.stderr.contains("E_HTTP_4XX"))
        let badHash = try await Self.run(["get", w.origin.url("/f.bin"), "-o", w.out.appendingPathComponent("h").path, "--sha256", String(repeating: "0", count: 64), "--db", w.db])
        #expect(badHash.status == 4)
        #expect(badHash.stderr.contains("E_CHECKSUM_MISMATCH"))
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("h").path))
        let tooBig = try await Self.run(["get", w.origin.url("/f.bin"), "-o", w.out.appendingPathComponent("big").path, "--max-size", "9999", "--db", w.db])
        #expect(tooBig.status == 4 && tooBig.stderr.contains("E_BODY_TOO_LONG"))
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("big").path))
        let badURL = try await Self.run(["get", "ftp://example.com/x", "--db", w.db])
        #expect(badURL.status == 64)
        let badFlag = try await Self.run(["get", "--no-such-flag"])
        #expect(badFlag.status == 64)
        let unknown = try await Self.run(["status", "nope", "--db", w.db])
        #expect(unknown.status == 6)
        let help = try await Self.run(["--help"])
        #expect(help.stdout.contains("EXIT CODES") && help.stdout.contains("130"))
        // A plain get into the working directory, named from the URL.
        let plain = try await Self.run(["get", w.origin.url("/f.bin"), "--db", w.db], cwd: w.out)
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("f.bin")) == data)
    }

    @Test func pauseCancelAndStatusFromAnotherProcess() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 12 << 20)
        var slow = Fault(); slow.stallAfterBytes = 2 << 20   // hangs there until paused
        w.origin.setFault(slow, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let (p, out, err) = try Self.launch(["get", w.origin.url("/f.bin") + "?api_key=PLANTED_SECRET", "-o", target.path, "--id", "job1", "--db", w.db])
        #expect(await w.origin.waitForRequests { !$0.isEmpty })
        let paused = try await Self.run(["pause", "job1", "--db", w.db])
        #expect(paused.status == 0)
        let running = await Self.finish(p, out, err)
        let errText = running.stderr, outText = running.stdout
        #expect(running.status == 130, "the running get stops when another process pauses it: \(errText)")
        let status = try await Self.run(["status", "job1", "--json", "--db", w.db])
        #expect(status.stdout.contains("\"state\" : \"paused\""))
        for text in [errText, outText, status.stdout, try await Self.run(["list", "--db", w.db]).stdout] {
            #expect(!text.contains("PLANTED_SECRET"))
        }
        w.origin.setFault(nil, for: "/f.bin")
        // The stored URL lost its secret: a bare resume says what to run, and sends nothing.
        #expect(errText.contains("courier resume job1 --url URL"), "\(errText)")
        w.origin.clearRequests()
        let refused = try await Self.run(["resume", "job1", "--db", w.db])
        #expect(refused.status == 64 && refused.stderr.contains("E_URL_NEEDED"), "\(refused.stderr)")
        #expect(w.origin.requests.isEmpty)
        let wrong = try await Self.run(["resume", "job1", "--url", w.origin.url("/other.bin") + "?api_key=X", "--db", w.db])
        #expect(wrong.status == 64 && wrong.stderr.contains("E_INVALID_ARGUMENT"), "\(wrong.stderr)")
        let resumed = try await Self.run(["resume", "job1", "--url", w.origin.url("/f.bin") + "?api_key=PLANTED_SECRET", "--db", w.db])
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(w.origin.requests.allSatisfy { !($0.query ?? "").contains("REDACTED") })
        #expect(w.origin.requests.contains { ($0.query ?? "").contains("PLANTED_SECRET") && $0.range != nil })
        #expect(try Data(contentsOf: target) == data)
        let cancelled = try await Self.run(["cancel", "job1", "--db", w.db])
        #expect(cancelled.status == 0)
        #expect(FileManager.default.fileExists(atPath: target.path))   // a finished file is kept
        #expect(try await Self.run(["status", "job1", "--db", w.db]).status == 6)
    }

    @Test func hostileContentDispositionNameStaysInTheWorkingDirectory() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 5000)
        var evil = Fault(); evil.contentDisposition = "../../evil.sh"
        w.origin.setFault(evil, for: "/f.bin")
        let result = try await Self.run(["get", w.origin.url("/f.bin"), "--db", w.db], cwd: w.out)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("evil.sh")) == data)
        #expect(!FileManager.default.fileExists(atPath: w.base.appendingPathComponent("evil.sh").path))
    }

    @Test func serveCommandServesADirectoryUntilInterrupted() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("s.bin", size: 70_000)
        let (server, out, serverErr) = try Self.launch(["serve", w.served.path, "--port", "0"])
        defer { if server.isRunning { server.terminate() } }
        // The first line names the URL with the port picked.
        let text: String = await withCheckedContinuation { continuation in
            Thread {
                var line = Data()
                while !line.contains(UInt8(ascii: "\n")) {
                    let chunk = out.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    line.append(chunk)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }.start()
        }
        let port = try #require(text.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
        let got = try await Self.run(["get", "http://127.0.0.1:\(port)/s.bin", "-o", w.out.appendingPathComponent("s.bin").path, "--db", w.db])
        #expect(got.status == 0, "stderr: \(got.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("s.bin")) == data)
        kill(server.processIdentifier, SIGINT)
        let stopped = await Self.finish(server, out, serverErr)
        #expect(stopped.status == 0)
    }
}

/// Output collected on one Dispatch thread and read after the group's wait.
final class DataBox: @unchecked Sendable { // written once before group.leave(), read after group.wait()
    var data = Data()
}
