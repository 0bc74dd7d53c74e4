@_exported import CourierTestSupport
import CourierAsyncHTTPClient
import CourierURLSession
import Crypto
import Foundation
import Logging
@testable import CourierCore
import CourierOrigin

/// A temporary world for one integration test: a served directory with generated files,
/// a live origin on loopback, a root directory, and a database file.
final class Fixture: @unchecked Sendable { // used from one test at a time
    let base: URL
    let served: URL
    let root: URL
    let dbPath: String
    let origin: CourierOrigin
    /// In the HTTP/2 pass, this test's own client to nginx (shut down with the fixture): a
    /// test that counts requests or bytes must not share a connection that another test's
    /// faults close (a closed connection is a legitimate retry, one request more).
    private let http2Transport: AsyncHTTPClientTransport?

    init() async throws {
        // nginx starts once, on first use (a key made by openssl, then a wait until it listens):
        // off the cooperative pool, so the fixtures waiting for it hold none of its threads.
        if Self.overHTTP2 { _ = try await offThePool { NginxServer.shared.certificate } }
        http2Transport = Self.overHTTP2 ? Self.ownAsyncHTTPClientTransport() : nil
        base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-test-\(UUID().uuidString)")
        served = base.appendingPathComponent("served")
        root = base.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        dbPath = base.appendingPathComponent("courier.sqlite").path
        origin = try await CourierOrigin.start(directory: served)
    }

    func tearDown() async {
        try? await http2Transport?.shutdown()   // the test is over: nothing waits for the client
        try? await origin.stop()
        try? FileManager.default.removeItem(at: base)
    }

    /// Writes a file of deterministic pseudo-random bytes and returns its bytes.
    @discardableResult
    func serve(_ name: String, size: Int, seed: UInt64 = 1) throws -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var bytes = [UInt8](repeating: 0, count: size)
        for i in 0..<size {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            bytes[i] = UInt8(truncatingIfNeeded: state)
        }
        let data = Data(bytes)
        try data.write(to: served.appendingPathComponent(name))
        return data
    }

    /// The URL a test downloads `name` from: the origin's, or with
    /// `COURIER_TEST_TRANSPORT=http2` the same through nginx's HTTP/2 proxy
    /// (``NginxServer/proxied(_:)``).
    func url(_ name: String) -> String {
        let direct = origin.url("/" + name)
        return Self.overHTTP2 ? NginxServer.shared.proxied(direct) ?? direct : direct
    }

    func database() throws -> CourierDatabase { try CourierDatabase(path: dbPath) }

    func configuration(_ change: (inout DownloaderConfiguration) -> Void = { _ in }) -> DownloaderConfiguration {
        var c = DownloaderConfiguration(rootDirectory: root)
        c.retryPolicy = RetryPolicy(baseDelay: .milliseconds(20), maxDelay: .milliseconds(100), maxAttempts: 6)
        c.freeSpaceReserve = 0
        c.idleTimeout = .seconds(5)
        change(&c)
        // A test that keeps this idle timeout and the system's clock counts on downloads that
        // do not stall: no idle abort under a loaded machine's pauses (``NoIdleEngineClock``).
        // Decided here: a test that wants the watchdog sets its window in `change`, not on
        // the configuration this returns.
        if c.idleTimeout == .seconds(5), c.clock is SystemEngineClock { c.clock = NoIdleEngineClock() }
        return c
    }

    func downloader(refresher: (any URLRefreshing)? = nil, logger: Logger = Logger(label: "test"), _ change: (inout DownloaderConfiguration) -> Void = { _ in }) throws -> Downloader {
        Downloader(configuration: configuration(change), database: try database(), transportOrDefault: transport(), urlRefresher: refresher, logger: logger)
    }

    /// The transport the integration suite runs over: AsyncHTTPClient by default (`nil`: the
    /// engine's own), URLSession with `COURIER_TEST_TRANSPORT=urlsession`, AsyncHTTPClient
    /// trusting nginx's certificate with `COURIER_TEST_TRANSPORT=http2` (this fixture's own
    /// client; scripts/test runs the suite all three ways).
    func transport() -> (any HTTPTransport)? {
        Self.transportName == "urlsession" ? URLSessionTransport() : http2Transport
    }

    /// For a test that builds its own ``Downloader`` on the default transport: what reaches
    /// ``url(_:)`` in every pass — nginx's certificate trusted in the HTTP/2 pass, `nil` (the
    /// default) otherwise.
    static func defaultOrHTTP2() -> (any HTTPTransport)? { overHTTP2 ? http2Transport : nil }

    /// A new AsyncHTTPClient transport of the test's own (shut down by it) that reaches
    /// ``url(_:)`` in every pass: trusting nginx's certificate in the HTTP/2 pass.
    static func ownAsyncHTTPClientTransport() -> AsyncHTTPClientTransport {
        guard overHTTP2, let certificate = NginxServer.shared.certificate else { return AsyncHTTPClientTransport() }
        return AsyncHTTPClientTransport(trust: .additionalCA(pemFile: certificate))
    }

    static let overHTTP2 = transportName == "http2"
    private static let transportName = ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"]
    /// One client for the process, as the engine's default is: it lives as long as the tests.
    private static let http2Transport: (any HTTPTransport)? = NginxServer.shared.certificate.map {
        AsyncHTTPClientTransport(trust: .additionalCA(pemFile: $0))
    }

    func finalData(_ relative: String) -> Data? { try? Data(contentsOf: root.appendingPathComponent(relative)) }
    func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent(relative).path) }
    func partialLength(_ relative: String) -> Int64 { PartialFile.length(at: root.appendingPathComponent(relative + ".partial")) }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }
}

/// Runs a test body with a fixture and always tears it down.
func withFixture(_ body: (Fixture) async throws -> Void) async throws {
    let fixture = try await Fixture()
    do { try await body(fixture) } catch { await fixture.tearDown(); throw error }
    await fixture.tearDown()
}

/// A log handler that keeps every line, to check what reaches logs.
final class CapturingLog: @unchecked Sendable { // guarded by lock
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ s: String) { lock.lock(); lines.append(s); lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return lines.joined(separator: "\n") }

    func logger() -> Logger {
        var l = Logger(label: "capture") { _ in CapturingHandler(sink: self) }
        l.logLevel = .trace
        return l
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturingLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
    func log(event: LogEvent) {
        sink.append("\(event.level) \(event.message) \(event.metadata ?? [:])")
    }
}

/// Fetches `url` through `transport` as the engine reads a body, a little slower than
/// loopback at first (as the engine is while it writes, so the socket fills): the bytes and
/// the largest part the transport handed over. Shuts the transport down.
func readInParts(_ transport: any HTTPTransport, url: String) async throws -> (data: Data, largest: Int) {
    var received = Data(), largest = 0
    do {
        let response = try await transport.send(TransportRequest(url: url, timeout: .seconds(30)))
        for try await part in response.body {
            if received.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            largest = max(largest, part.count)
            part.withUnsafeBytes { received.append(contentsOf: $0) }
        }
    } catch { try await transport.shutdown(); throw error }
    try await transport.shutdown()
    return (received, largest)
}
