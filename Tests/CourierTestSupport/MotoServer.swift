import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible server for the tests: the endpoint `scripts/test` started
/// ($COURIER_S3_ENDPOINT), else a `moto_server` this process starts on a free loopback port.
public final class MotoServer: @unchecked Sendable { // set once, then read-only
    public static let shared = MotoServer()
    public private(set) var endpoint: URL?
    /// The server's request log (one line per request, with its status): what the server
    /// received, read by the tests that measure an upload from the server's side.
    public private(set) var log: URL?
    private var process: Process?

    private init() {
        let env = ProcessInfo.processInfo.environment
        if let value = env["COURIER_S3_ENDPOINT"], let url = URL(string: value) {
            endpoint = url
            log = env["COURIER_S3_LOG"].map { URL(fileURLWithPath: $0) }
            return
        }
        let port = Int.random(in: 20_000...40_000)
        // The server stops with this process (moto ignores SIGTERM, and an atexit handler does
        // not run when the test runner is killed).
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("courier-moto-\(port).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)   // a missing log only makes the server-side counts unavailable
        guard let p = launchServer(["moto_server", "-H", "127.0.0.1", "-p", "\(port)"], stderr: FileHandle(forWritingAtPath: logURL.path)) else { return }
        log = logURL
        process = p
        if waitUntilListening(port: port, p) { endpoint = URL(string: "http://127.0.0.1:\(port)")! }
        atexit { MotoServer.shared.process?.interrupt() }
    }

    public var isAvailable: Bool { endpoint != nil }

    /// The part numbers the server accepted (200) for `bucket/key`, one entry per request,
    /// from its log; `nil` when there is no log.
    public func acceptedParts(bucket: String, key: String) -> [Int]? {
        guard let log, let text = try? String(contentsOf: log, encoding: .utf8) else { return nil }
        // The part number anywhere in the query (a presigned URL's query starts with X-Amz-…).
        let prefix = "\"PUT /\(bucket)/\(key)?"
        return text.split(separator: "\n").compactMap { line -> Int? in
            guard let start = line.range(of: prefix), line.hasSuffix("\" 200 -") else { return nil }
            let query = line[start.upperBound...].prefix { $0 != " " }
            guard let number = query.split(separator: "&").first(where: { $0.hasPrefix("partNumber=") }) else { return nil }
            return Int(number.dropFirst("partNumber=".count))
        }
    }
}

/// Starts a test server (`arguments`) under ``stopsWithThisProcess``; `nil` when it cannot
/// be started. Its standard output is discarded, its standard error goes to `stderr`.
func launchServer(_ arguments: [String], stderr: FileHandle? = nil) -> Process? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", stopsWithThisProcess] + arguments
    p.standardOutput = FileHandle.nullDevice
    p.standardError = stderr ?? FileHandle.nullDevice
    return (try? p.run()) != nil ? p : nil   // not startable: the suites that need it are skipped
}

/// Waits up to 10 s for a launched server to listen on `port`; `false` when it did not,
/// or exited first (what it needs is not installed).
func waitUntilListening(port: Int, _ p: Process) -> Bool {
    for _ in 0..<100 {
        if isListening(port: port) { return true }
        if !p.isRunning { return false }
        usleep(100_000)
    }
    return false
}

/// A Python wrapper that runs `argv[1:]` and stops it (SIGINT, then SIGKILL) once this test
/// process is gone. Not PR_SET_PDEATHSIG: that fires when the spawning *thread* exits, and
/// Swift's pool threads come and go, which killed the servers in the middle of a run.
let stopsWithThisProcess = """
    import os, signal, subprocess, sys, time
    parent = \(getpid())
    child = subprocess.Popen(sys.argv[1:], stdout=sys.stdout, stderr=sys.stderr)
    signal.signal(signal.SIGINT, lambda *_: child.send_signal(signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: child.kill())
    while child.poll() is None:
        time.sleep(0.5)
        try:
            os.kill(parent, 0)
        except OSError:
            child.send_signal(signal.SIGINT)
            time.sleep(1)
            child.kill()
    sys.exit(child.returncode or 0)
    """
