import CourierAsyncHTTPClient
import CourierTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import CourierCore
import CourierOrigin

@Suite(.serialized) struct SafetyTests {
    /// The room kept free scales with the file (issue 31 point 5): a 5 MiB file keeps 5 MiB
    /// free beside it, which an 8 MiB disk of its own does not have. (A disk of its own, not
    /// "what is free now" here, which another process deleting files can change.)
    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs"))
    func refusesToStartWithoutFreeSpace() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 5 << 20)
            let mount = try TmpfsMount(at: fx.base.appendingPathComponent("small"), megabytes: 8)
            defer { mount.unmount() }
            #expect(DiskSpace.available(at: mount.url) != nil)
            var config = fx.configuration()
            config.rootDirectory = mount.url
            config.freeSpaceReserve = 100 << 20
            let d = Downloader(configuration: config, database: try fx.database(), transportOrDefault: Fixture.defaultOrHTTP2())
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            do { try await d.waitForCompletion(id: "x"); Issue.record("must not start") } catch let e as CourierError {
                #expect(e.code == .paused)
                #expect(e.message.contains("E_NO_SPACE"))
            }
            let record = try #require(try await d.record(id: "x"))
            await d.shutdown()
            #expect(record.state == .paused)
            #expect(record.lastErrorCode == "E_NO_SPACE")
            #expect(PartialFile.length(at: mount.url.appendingPathComponent("f.bin.partial")) == 0)
            #expect(!FileManager.default.fileExists(atPath: mount.url.appendingPathComponent("f.bin").path))
        }
    }

    /// A real full disk: a 16 MiB tmpfs as the root, filled up while the download runs.
    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs"))
    func diskFullWhileWritingPausesKeepsThePartialAndResumesAfterSpaceIsFreed() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 8 << 20)
            var slow = Fault(); slow.bytesPerSecond = 4 << 20
            fx.origin.setFault(slow, for: "/f.bin")
            let mount = try TmpfsMount(at: fx.base.appendingPathComponent("small"), megabytes: 16)
            defer { mount.unmount() }
            var config = fx.configuration()
            config.rootDirectory = mount.url
            let d = Downloader(configuration: config, database: try fx.database(), transportOrDefault: Fixture.defaultOrHTTP2())
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            let partial = mount.url.appendingPathComponent("f.bin.partial")
            #expect(try await eventually { PartialFile.length(at: partial) >= 2 << 20 })
            // Something else fills the disk, leaving about 1 MiB.
            let filler = mount.url.appendingPathComponent("filler")
            let free = DiskSpace.available(at: mount.url) ?? 0
            try Data(count: Int(max(0, free - (1 << 20)))).write(to: filler)
            do { try await d.waitForCompletion(id: "x"); Issue.record("must pause") } catch let e as CourierError {
                #expect(e.code == .paused && e.message.contains("E_NO_SPACE"))
            }
            let record = try #require(try await d.record(id: "x"))
            #expect(record.state == .paused && record.lastErrorCode == "E_NO_SPACE")
            let kept = PartialFile.length(at: partial)
            #expect(kept > 2 << 20 && kept == record.bytesReceived)
            #expect(try Data(contentsOf: partial) == data.prefix(Int(kept)))   // intact, every byte right
            try FileManager.default.removeItem(at: filler)
            fx.origin.setFault(nil, for: "/f.bin")
            try await d.resume(id: "x")
            _ = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(try Data(contentsOf: mount.url.appendingPathComponent("f.bin")) == data)
        }
    }

    /// A server that compresses although asked not to, with a body that decodes to a
    /// thousand times its size (a decompression bomb): decoding stops at the ratio limit
    /// (100), the download fails with E_BODY_TOO_LONG and no final file appears.
    @Test func decompressionBombIsCutAndFailed() async throws {
        try await withFixture { fx in
            // 64 MiB of zeros, gzipped by the system's gzip to about 64 KiB, served as is.
            let zeros = fx.base.appendingPathComponent("zeros")
            let command = "gzip -9 -c '\(zeros.path)' > '\(fx.served.appendingPathComponent("bomb.bin").path)'"
            let status = try await offThePool {   // seconds under load: never on the cooperative pool
                try Data(count: 64 << 20).write(to: zeros)
                let gzip = Process()
                gzip.executableURL = URL(fileURLWithPath: "/bin/sh")
                gzip.arguments = ["-c", command]
                try gzip.run()
                gzip.waitUntilExit()
                return gzip.terminationStatus
            }
            #expect(status == 0)
            var gz = Fault(); gz.contentEncoding = "gzip"
            fx.origin.setFault(gz, for: "/bomb.bin")
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "bomb", url: fx.url("bomb.bin"), destination: "bomb.bin"))
            await #expect { try await d.waitForCompletion(id: "bomb") } throws: { ($0 as? CourierError)?.code == .bodyTooLong }
            await d.shutdown()
            let sent = fx.origin.requests.filter { $0.path == "/bomb.bin" }.map(\.bodyBytesSent).reduce(0, +)
            #expect(sent < 1 << 20, "compressed bytes sent: \(sent)")
            #expect(!fx.exists("bomb.bin"))
            // What was decoded before the cut stays bounded by the ratio.
            #expect(fx.partialLength("bomb.bin") <= 100 * max(sent, 1))
            #expect(try await d.record(id: "bomb")?.state == .failed)
        }
    }

    @Test func checksumMismatchFailsDeletesPartialAndNeverCreatesTheFile() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 1 << 20)
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", sha256: String(repeating: "ab", count: 32)))
            do { try await d.waitForCompletion(id: "x"); Issue.record("must fail") } catch let e as CourierError {
                #expect(e.code == .checksumMismatch)
            }
            await d.shutdown()
            #expect(!fx.exists("f.bin") && !fx.exists("f.bin.partial"))
            #expect(try await fx.database().record(id: "x")?.state == .failed)
        }
    }

    @Test func checksumHoldsAcrossAResumeInANewEngine() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 4 << 20)
            var slow = Fault(); slow.bytesPerSecond = 2 << 20; slow.stallAfterBytes = 2 << 20   // the shutdown lands before the end
            fx.origin.setFault(slow, for: "/f.bin")
            let first = try fx.downloader()
            try await first.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", sha256: Fixture.sha256(data)))
            #expect(try await eventually { fx.partialLength("f.bin") > 1 << 20 })
            await first.shutdown()
            fx.origin.setFault(nil, for: "/f.bin")
            fx.origin.endStalls()
            let second = try fx.downloader()
            try await second.start()
            let record = try await second.waitForCompletion(id: "x")
            await second.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.last?.status == 206)
        }
    }

    @Test func invalidRequestsAreRefusedWithCodes() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            let cases: [(DownloadRequest, CourierError.Code)] = [
                (DownloadRequest(id: "a", url: "ftp://x/y", destination: "y"), .unsupportedScheme),
                (DownloadRequest(id: "a", url: "http//broken", destination: "y"), .invalidURL),
                (DownloadRequest(id: "a", url: fx.url("f"), destination: "../../etc/passwd"), .invalidPath),
                (DownloadRequest(id: "a", url: fx.url("f"), destination: "/etc/passwd"), .invalidPath),
                (DownloadRequest(id: "../a", url: fx.url("f"), destination: "y"), .invalidArgument),
                (DownloadRequest(id: "a", url: fx.url("f"), destination: "y", sha256: "xyz"), .invalidArgument),
            ]
            for (request, code) in cases {
                do { try await d.enqueue(request); Issue.record("accepted \(request)") } catch let e as CourierError {
                    #expect(e.code == code, "\(request)")
                }
            }
            await d.shutdown()
        }
    }

    @Test func redirectsAreFollowedUpToFive() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 10_000)
            for i in 1...6 {
                var f = Fault(); f.redirectTo = i == 1 ? "/f.bin" : "/r\(i - 1)"; f.redirectStatus = i % 2 == 0 ? 301 : 307
                fx.origin.setFault(f, for: "/r\(i)")
            }
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "five", url: fx.url("r5"), destination: "five.bin"))
            _ = try await d.waitForCompletion(id: "five")
            #expect(fx.finalData("five.bin") == data)
            try await d.enqueue(DownloadRequest(id: "six", url: fx.url("r6"), destination: "six.bin"))
            do { try await d.waitForCompletion(id: "six"); Issue.record("six redirects must fail") } catch let e as CourierError {
                #expect(e.code == .tooManyRedirects)
            }
            var ftp = Fault(); ftp.redirectTo = "ftp://127.0.0.1/f.bin"
            fx.origin.setFault(ftp, for: "/ftp")
            try await d.enqueue(DownloadRequest(id: "ftp", url: fx.url("ftp"), destination: "ftp.bin"))
            do { try await d.waitForCompletion(id: "ftp"); Issue.record("ftp redirect must fail") } catch let e as CourierError {
                #expect(e.code == .unsupportedScheme)
            }
            await d.shutdown()
            #expect(!fx.exists("six.bin") && !fx.exists("ftp.bin"))
        }
    }

    @Test func httpsToHttpRedirectIsRefused() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 1000)
            // The https side is played by a transport that answers like a TLS origin would;
            // the http target is the live origin.
            let transport = SecureFront(target: fx.url("f.bin"), inner: AsyncHTTPClientTransport())
            let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transport: transport)
            try await d.enqueue(DownloadRequest(id: "x", url: "https://secure.example/f.bin", destination: "f.bin"))
            do { try await d.waitForCompletion(id: "x"); Issue.record("must refuse") } catch let e as CourierError {
                #expect(e.code == .insecureRedirect)
            }
            await d.shutdown()
            try await transport.inner.shutdown()
            #expect(fx.origin.requests.isEmpty)
            #expect(!fx.exists("f.bin"))
        }
    }

    @Test func expiredLinkIsRefreshedOnceAndBeforeResume() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 2 << 20)
            var expired = Fault(); expired.failStatus = 403
            fx.origin.setFault(expired, for: "/expired")
            let refresher = Refresher(fresh: fx.url("f.bin"))
            let d = try fx.downloader(refresher: refresher)
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("expired"), destination: "f.bin"))
            let record = try await d.waitForCompletion(id: "x")
            #expect(fx.finalData("f.bin") == data)
            #expect(record.remoteUrl == fx.url("f.bin"))
            #expect(await refresher.reasons == [.accessDenied(status: 403)])

            // Still 403 after the refresh: fail with a clear code, no loop.
            let stubborn = Refresher(fresh: fx.url("expired"))
            let d2 = try fx.downloader(refresher: stubborn)
            try await d2.enqueue(DownloadRequest(id: "y", url: fx.url("expired"), destination: "y.bin"))
            do { try await d2.waitForCompletion(id: "y"); Issue.record("must fail") } catch let e as CourierError {
                #expect(e.code == .accessDenied && e.httpStatus == 403)
            }
            #expect(await stubborn.reasons.count == 1)
            await d.shutdown(); await d2.shutdown()

            // A resume asks for a fresh link first.
            let db = try fx.database()
            try Data(data.prefix(1000)).write(to: fx.root.appendingPathComponent("z.bin.partial"))
            var rec = DownloadRecord(id: "z", remoteUrl: fx.url("expired"), localFinalPath: "z.bin", partialPath: "z.bin.partial")
            rec.totalBytes = Int64(data.count); rec.state = .downloading
            try await db.save(rec)
            let resumer = Refresher(fresh: fx.url("f.bin"))
            let d3 = try fx.downloader(refresher: resumer)
            try await d3.start()
            _ = try await d3.waitForCompletion(id: "z")
            await d3.shutdown()
            #expect(await resumer.reasons == [.beforeResume])
            #expect(fx.finalData("z.bin") == data)
        }
    }

    @Test func authorizationHeadersAreSentToTheOriginOnlyAndNeverStored() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 50_000)
            fx.origin.requireAuthorization("Bearer TOKEN-XYZ")
            let log = CapturingLog()
            let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transportOrDefault: Fixture.defaultOrHTTP2(),
                               requestAuthorizer: StaticHeaders([("Authorization", "Bearer TOKEN-XYZ")]), logger: log.logger())
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            _ = try await d.waitForCompletion(id: "x")
            // Without the header the origin refuses: the download failing proves it was sent.
            let bare = try fx.downloader()
            try await bare.enqueue(DownloadRequest(id: "y", url: fx.url("f.bin"), destination: "y.bin"))
            do { try await bare.waitForCompletion(id: "y"); Issue.record("must be refused") } catch let e as CourierError {
                #expect(e.code == .accessDenied && e.httpStatus == 401)
            }
            // A redirect to another origin (localhost is not 127.0.0.1) goes without the token.
            var away = Fault(); away.redirectTo = "http://localhost:\(fx.origin.port)/f.bin"
            fx.origin.setFault(away, for: "/away")
            try await d.enqueue(DownloadRequest(id: "z", url: fx.url("away"), destination: "z.bin"))
            do { try await d.waitForCompletion(id: "z"); Issue.record("the token must not follow the redirect") } catch let e as CourierError {
                #expect(e.code == .accessDenied)
            }
            #expect(fx.origin.requests.last.map { $0.path == "/f.bin" && $0.authorization == nil } == true)
            await d.shutdown(); await bare.shutdown()
            #expect(fx.finalData("f.bin") == data)
            let dbBytes = try Data(contentsOf: URL(fileURLWithPath: fx.dbPath)) + ((try? Data(contentsOf: URL(fileURLWithPath: fx.dbPath + "-wal"))) ?? Data())
            #expect(dbBytes.range(of: Data("TOKEN-XYZ".utf8)) == nil)
            #expect(!log.text.contains("TOKEN-XYZ"))
        }
    }

    /// A token in the URL is used for this process's requests but never written to the
    /// database file; after a relaunch the refresher supplies the full URL again.
    @Test func queryTokensNeverReachTheDatabaseFile() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 3 << 20)
            var slow = Fault(); slow.bytesPerSecond = 3 << 20
            fx.origin.setFault(slow, for: "/f.bin")
            let secretURL = fx.url("f.bin") + "?api_key=PLANTED-TOKEN-42&ok=1"
            let first = try fx.downloader()
            try await first.enqueue(DownloadRequest(id: "x", url: secretURL, destination: "f.bin"))
            #expect(try await eventually { fx.partialLength("f.bin") > 256 << 10 })
            await first.shutdown()
            #expect(fx.origin.requests.first.map { _ in true } == true)
            let stored = try #require(try await fx.database().record(id: "x")).remoteUrl
            #expect(!stored.contains("PLANTED") && stored.contains("api_key=REDACTED") && stored.contains("ok=1"))
            fx.origin.setFault(nil, for: "/f.bin")
            let second = try fx.downloader(refresher: Refresher(fresh: secretURL))
            try await second.start()
            _ = try await second.waitForCompletion(id: "x")
            await second.shutdown()
            #expect(fx.finalData("f.bin") == data)
            let files = try FileManager.default.contentsOfDirectory(atPath: fx.base.path).filter { $0.hasPrefix("courier.sqlite") }
            for file in files {
                let bytes = try Data(contentsOf: fx.base.appendingPathComponent(file))
                #expect(bytes.range(of: Data("PLANTED-TOKEN-42".utf8)) == nil, "\(file) holds the token")
            }
        }
    }

    @Test func secretsNeverReachErrorsLogsOrTheErrorColumn() async throws {
        try await withFixture { fx in
            let log = CapturingLog()
            let d = try fx.downloader(logger: log.logger()) { $0.retryPolicy.maxAttempts = 2 }
            let secretURL = fx.url("missing.bin") + "?api_key=SEKRIT123&X-Amz-Signature=SIGSEKRIT&ok=1"
            try await d.enqueue(DownloadRequest(id: "x", url: secretURL, destination: "x.bin"))
            var message = ""
            do { try await d.waitForCompletion(id: "x") } catch let e as CourierError { message = e.description }
            var broken = Fault(); broken.failStatus = 500
            fx.origin.setFault(broken, for: "/gone")
            try await d.enqueue(DownloadRequest(id: "y", url: fx.url("gone") + "?token=SEKRIT456", destination: "y.bin"))
            do { try await d.waitForCompletion(id: "y") } catch let e as CourierError { message += e.description }
            let record = try #require(try await d.record(id: "y"))
            await d.shutdown()
            for text in [message, log.text, record.lastErrorMessage ?? ""] {
                #expect(!text.contains("SEKRIT"), "leaked: \(text)")
            }
            #expect(log.text.contains("REDACTED") || message.contains("404"))
        }
    }
}

/// Plays an https origin that redirects to an http URL.
struct SecureFront: HTTPTransport {
    let target: String
    let inner: AsyncHTTPClientTransport
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.hasPrefix("https://secure.example") {
            return TransportResponse(status: 302, headerFields: [.location: target, .contentLength: "0"], body: TransportBody(EmptyBody()))
        }
        return try await inner.send(request)
    }
    func shutdown() async throws {}
}

struct EmptyBody: AsyncSequence, Sendable {
    typealias Element = BodyChunk
    struct AsyncIterator: AsyncIteratorProtocol { mutating func next() async throws -> BodyChunk? { nil } }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

actor Refresher: URLRefreshing {
    let fresh: String
    var reasons: [URLRefreshReason] = []
    init(fresh: String) { self.fresh = fresh }
    func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String? {
        reasons.append(reason)
        return fresh
    }
}

/// A small tmpfs mounted for a test (needs root; the test is skipped elsewhere).
struct TmpfsMount {
    let url: URL

    static let isAvailable: Bool = {
        guard getuid() == 0 else { return false }
        let probe = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-tmpfs-probe-\(getpid())")
        guard let m = try? TmpfsMount(at: probe, megabytes: 1) else { return false }
        m.unmount()
        return true
    }()

    init(at url: URL, megabytes: Int) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/mount")
        p.arguments = ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", url.path]
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CourierError(.fileWrite, "mount failed") }
        self.url = url
    }

    func unmount() {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/umount")
        p.arguments = [url.path]
        try? p.run()
        p.waitUntilExit()
        try? FileManager.default.removeItem(at: url)
    }
}
