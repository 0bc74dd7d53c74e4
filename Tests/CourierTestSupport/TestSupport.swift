import Courier
import CourierURLSession
import Foundation

// Helpers every test target shares (one copy, not one per target).

/// The code of the error `body` throws (`nil` when it throws none), or `"native: …"` when
/// the error is not a ``CourierError``: what error-boundary tests compare.
public func errorCode(_ body: () async throws -> Void) async -> String? {
    do { try await body(); return nil } catch let e as CourierError { return e.code.rawValue } catch { return "native: \(type(of: error)) \(error)" }
}

/// Polls until a condition holds or the timeout passes. The timeout only bounds a wait
/// that failed (a condition that holds returns at once): it is long, because the parallel
/// suite on two cores can starve one test for tens of seconds.
public func eventually(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return false
}

/// Returns when the calling task is cancelled (`true`), or when `limit` has passed first
/// (`false`: a hook that holds a run until it is stopped, and it never was). A wait for the
/// cancel itself, not a sleep that a cancel happens to interrupt.
public func untilCancelled(atMost limit: Duration = .seconds(60)) async -> Bool {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { continuation.yield() }
    for await _ in stream { return false }   // the limit passed
    return true   // the stream ended: the task was cancelled
}

extension Duration {
    /// In seconds, for Dispatch's deadlines (the tests' failure bounds).
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A fresh folder under the system's temporary directory.
public func temporaryFolder(_ prefix: String) -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)   // a test that needs it fails on its first write
    return url
}

/// A loopback port nothing listens on (bound, never listening).
public func closedLoopbackPort() -> Int {
    // The socket stays bound, never listening, for the rest of the test process: a connection
    // to the port is refused, and no server of a test running alongside can take the port
    // (closed at once, it was free for the next bind: a download meant to meet a dead server
    // reached another test's, under a full parallel run).
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A self-signed certificate for 127.0.0.1 and localhost, made with openssl for the test.
public struct SelfSignedCertificate: Sendable {
    public let certificate: String
    public let key: String

    public static let isAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

    public init(in dir: URL) throws {
        certificate = dir.appendingPathComponent("cert.pem").path
        key = dir.appendingPathComponent("key.pem").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
                       "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CourierError(.unexpected, "openssl could not make a certificate") }
    }
}

/// The transport the feature suites run over: `nil` (the platform's default, AsyncHTTPClient
/// here) unless `COURIER_TEST_TRANSPORT=urlsession`, which scripts/test sets for its second
/// pass over the attachment, media and documents suites.
public func testTransport() -> (any HTTPTransport)? {
    ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] == "urlsession" ? URLSessionTransport() : nil
}

/// A small seeded generator (SplitMix64): the same sequence for a seed on every machine, so a
/// randomized test's failure replays from its seed.
public struct SplitMix: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs `work`, which blocks its thread (a child process waited for, a file read to its
/// end), on a thread of its own and awaits it. Never inline on Swift's cooperative pool: it
/// has one thread per core (two here), and while two of them block, every task of the test
/// process stands still (measured: two blocked threads held a 100 ms sleep for 5 s; the
/// hogged runs of b278bd3 in RELIABILITY.md).
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
