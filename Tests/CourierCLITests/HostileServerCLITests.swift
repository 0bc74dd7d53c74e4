import CourierOrigin
import CourierTestSupport
import Foundation
import Testing

/// Issue 28: `courier get` against a server written to lie (``HostileServer``: raw sockets,
/// no HTTP library), over both transports. Each case asserts the code, that no file is left
/// (no final file, no partial with bytes), and the number of requests the server saw: a
/// failure no retry can mend costs one attempt. The time to the answer is printed
/// (`hostile:` lines), never asserted; RELIABILITY.md keeps the figures.
@Suite(.serialized) struct HostileServerCLITests {
    /// One lie and what Courier must answer.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let script: HostileServer.Script
        var args: [String] = []
        /// The exit code's error code, or nil for success.
        let code: String?
        /// Requests the server must have seen.
        let requests: Int
        /// The most memory the command may hold (measured with GNU time where it is installed).
        var peakMemoryMiB: Int?
        var testDescription: String { name }
    }

    static let idleTimeout = 5

    static func reply(_ head: String, body: Data = Data()) -> [HostileServer.Step] {
        [.send(Data(head.utf8) + body), .close]
    }

    static let pad = String(repeating: "a", count: 1000)

    /// The cases, or those whose name contains $COURIER_HOSTILE_CASE (to replay one).
    static let cases: [Case] = {
        guard let only = ProcessInfo.processInfo.environment["COURIER_HOSTILE_CASE"] else { return all }
        return all.filter { $0.name.contains(only) }
    }()

    static let all: [Case] = [
        Case(name: "oversized header block", script: { _, _ in
            var head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n"
            for i in 0..<2000 { head += "X-Pad-\(i): \(pad)\r\n" }
            return reply(head + "\r\n", body: Data(count: 10))
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "endless header block", script: { _, _ in
            [.text("HTTP/1.1 200 OK\r\n"), .sendForever(Data("X-Pad: \(pad)\r\n".utf8))]
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "endless header line", script: { _, _ in
            [.text("HTTP/1.1 200 OK\r\nX-Pad: "), .sendForever(Data(pad.utf8))]
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "redirect loop", script: { _, _ in
            // It says it closes (as it does): a client that pooled the connection would
            // otherwise race the close, and the count would say more than the rule.
            reply("HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        }, code: "E_TOO_MANY_REDIRECTS", requests: 6),
        Case(name: "redirect to another scheme", script: { _, _ in
            reply("HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1/f.bin\r\nContent-Length: 0\r\n\r\n")
        }, code: "E_UNSUPPORTED_SCHEME", requests: 1),
        Case(name: "decompression bomb", script: { _, _ in
            let bomb = HostileServerCLITests.gzipBomb
            return reply("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\n\r\n", body: bomb)
        }, args: ["--max-size", "8M"], code: "E_BODY_TOO_LONG", requests: 1, peakMemoryMiB: 100),
        Case(name: "compressed body past --max-size", script: { _, _ in
            // Compressed about 3.5 times (well within the ratio limit): only the decoded bytes
            // pass the limit, the encoded ones are under it.
            let body = HostileServerCLITests.compressedPastLimit
            return reply("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n", body: body)
        }, args: ["--max-size", "8M"], code: "E_BODY_TOO_LONG", requests: 1, peakMemoryMiB: 100),
        Case(name: "malformed chunking", script: { _, _ in
            reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "status line that is not one", script: { _, _ in
            reply("HTTP/1.1 OK\r\nContent-Length: 5\r\n\r\nhello")
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "conflicting Content-Lengths", script: { _, _ in
            reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 9\r\n\r\nhello", body: Data(count: 4))
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "negative Content-Length", script: { _, _ in
            reply("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello")
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "a reply that is not HTTP", script: { _, _ in
            reply("SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n\r\n")
        }, code: "E_PROTOCOL", requests: 1),
        Case(name: "206 naming the wrong range", script: { head, index in
            let total = 4 << 20
            if index == 0 {   // half the file, then a reset: the run resumes from what it kept
                return [.text("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\n\r\n"),
                        .send(Data(repeating: 7, count: total / 2)), .pause(0.3), .reset]
            }
            // Every later request gets a range starting 1000 bytes after the one asked for: a
            // resume becomes a start from zero, which it answers the same way (permanent).
            let asked = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("range:") }
            let start = (asked.flatMap { Int($0.split(separator: "=").last?.split(separator: "-").first ?? "") } ?? 0) + 1000
            return reply("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(start)-\(total - 1)/\(total)\r\n"
                         + "Content-Length: \(total - start)\r\nETag: \"v1\"\r\n\r\n", body: Data(repeating: 9, count: total - start))
        }, code: "E_PROTOCOL", requests: 3),
        Case(name: "connection reset", script: { _, _ in [.reset] }, args: ["--max-attempts", "3"], code: "E_NETWORK", requests: 3),
    ]

    /// The two bodies below, made once on a thread of their own (``offThePool(_:)``; a case
    /// waits for them before its command starts, never while it waits for a byte). Made
    /// inline by the first case, they held a thread of the cooperative pool for as long as
    /// the child processes took, and every case after waited in their initializer.
    static let bodiesMade = Task { try await offThePool { _ = (gzipBomb, compressedPastLimit) } }

    /// 64 MiB of zeros, gzipped by the system's gzip (about 64 KiB).
    static let gzipBomb = output(of: "/bin/sh", ["-c", "head -c 67108864 /dev/zero | gzip -c"])

    /// 16 MiB of four letters at random, gzipped (about 4.6 MiB).
    static let compressedPastLimit = output(of: "/usr/bin/python3", [
        "-c", "import random, sys, gzip; r = random.Random(28); t = bytes(97 + i % 4 for i in range(256)); "
            + "sys.stdout.buffer.write(gzip.compress(r.randbytes(16 << 20).translate(t), compresslevel=1))"])

    /// What a command prints (empty when it cannot run: the case then fails on its code).
    static func output(of executable: String, _ arguments: [String]) -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        try? p.run()   // not run: the empty body makes the case fail with its own message
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return data
    }

    @Test(arguments: cases, ["nio", "urlsession"])
    func aLyingServerGetsItsCodeAtOnce(_ lie: Case, transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try await Self.bodiesMade.value
        let server = try HostileServer(lie.script)
        defer { server.stop() }
        let target = w.out.appendingPathComponent("f.bin")
        let started = ContinuousClock.now
        let measured = lie.peakMemoryMiB != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/time")
        let peakFile = w.base.appendingPathComponent("peak-rss")
        let run = try await CLITests.run((measured ? ["-f", "%M", "-o", peakFile.path, CLITests.binary] : [])
                                         + ["get", server.url("/f.bin"), "-o", target.path, "--db", w.db, "--transport", transport,
                                          "--idle-timeout", "\(Self.idleTimeout)", "--connect-timeout", "2", "-q"] + lie.args
                                         + (ProcessInfo.processInfo.environment["COURIER_HOSTILE_VERBOSE"] != nil ? ["-v"] : []),
                                         executable: measured ? "/usr/bin/time" : nil)
        let took = ContinuousClock.now - started
        if ProcessInfo.processInfo.environment["COURIER_HOSTILE_VERBOSE"] != nil { print(run.stderr, server.requests) }
        print("hostile: \(lie.name) over \(transport): \(run.stderr.split(separator: "\n").last ?? "") requests \(server.requests.count) in \(took)")
        if let code = lie.code {
            #expect(run.status != 0 && run.stderr.contains(code), "\(lie.name) over \(transport): \(run.stderr)")
        } else {
            #expect(run.status == 0, "\(lie.name) over \(transport): \(run.stderr)")
        }
        #expect(server.requests.count == lie.requests, "\(lie.name) over \(transport): \(server.requests.count) requests; \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.path), "\(lie.name) over \(transport): a file was left")
        #expect(!FileManager.default.fileExists(atPath: target.path + ".partial") || (try? Data(contentsOf: URL(fileURLWithPath: target.path + ".partial")))?.isEmpty == true,
                "\(lie.name) over \(transport): a partial with bytes was left")
        if measured, let limit = lie.peakMemoryMiB {
            // GNU time's last line (a first one says the command's exit status when not 0).
            let kib = Int((try? String(contentsOf: peakFile, encoding: .utf8))?.split(separator: "\n").last ?? "") ?? 0
            print("hostile: \(lie.name) over \(transport): peak RSS \(kib / 1024) MiB")
            #expect(kib > 0 && kib < limit << 10, "\(lie.name) over \(transport): peak RSS \(kib) KiB")
        }
        HostileServerCLITests.expectNoBuildPath(run.stderr + run.stdout, lie.name)
    }

    /// The same lie (a header block that never ends) told to the other commands that talk
    /// HTTP: uploads to tus and S3, the media server's API, a document's remote. Each gets its
    /// code from the first reply: one request, never a retry.
    @Test(arguments: [
        (["put", "FILE", "URL/files/"], "tus upload"),
        (["put", "FILE", "s3://bucket/key.bin?endpoint=URL&region=us-east-1"], "S3 upload"),
        (["media", "download", "--root", "ROOT", "--server", "URL", "item1"], "media server"),
        (["doc", "bytes", "--dir", "ROOT", "--remote", "URL/docs", "a.txt"], "document remote"),
    ], ["nio", "urlsession"])
    func otherCommandsGetTheCodeFromTheFirstReply(_ command: (args: [String], name: String), transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let server = try HostileServer { _, _ in [.text("HTTP/1.1 200 OK\r\n"), .sendForever(Data("X-Pad: \(Self.pad)\r\n".utf8))] }
        defer { server.stop() }
        let file = w.base.appendingPathComponent("up.bin")
        try Data(repeating: 1, count: 1000).write(to: file)
        let root = w.base.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let args = command.args.map {
            $0.replacingOccurrences(of: "FILE", with: file.path).replacingOccurrences(of: "ROOT", with: root.path)
              .replacingOccurrences(of: "URL", with: server.url(""))
        } + ["--transport", transport] + (["get", "put"].contains(command.args[0]) ? ["--db", w.db] : [])
        let started = ContinuousClock.now
        let run = try await CLITests.run(args, environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "JELLYFIN_TOKEN": "t"])
        print("hostile: endless header block to \(command.name) over \(transport): \(run.stderr.split(separator: "\n").last ?? "") requests \(server.requests.count) in \(ContinuousClock.now - started)")
        #expect(run.status == 3 && run.stderr.contains("E_PROTOCOL"), "\(command.name) over \(transport): \(run.stderr)")
        #expect(server.requests.count == 1, "\(command.name) over \(transport): \(server.requests.count) requests")
        Self.expectNoBuildPath(run.stderr + run.stdout, command.name)
    }

    /// An attachment queued for upload to an HTTP remote that lies: the sync pass reports the
    /// code after one request, and the attachment stays queued for the queue's own backoff.
    @Test(arguments: ["nio", "urlsession"])
    func anAttachmentRemoteGetsTheCodeFromTheFirstReply(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let server = try HostileServer { _, _ in [.text("HTTP/1.1 200 OK\r\n"), .sendForever(Data("X-Pad: \(Self.pad)\r\n".utf8))] }
        defer { server.stop() }
        let file = w.base.appendingPathComponent("p.txt")
        try Data("hello".utf8).write(to: file)
        let app = w.base.appendingPathComponent("app.sqlite").path
        let saved = try await CLITests.run(["attachments", "save", "--db", app, "--remote", server.url("/att"), file.path])
        #expect(saved.status == 0 && server.requests.isEmpty, "\(saved.stderr)")
        let sync = try await CLITests.run(["attachments", "sync", "--db", app, "--remote", server.url("/att"), "--transport", transport])
        print("hostile: endless header block to an attachment remote over \(transport): \(sync.stderr.split(separator: "\n").first ?? "") requests \(server.requests.count)")
        #expect(sync.status == 3 && sync.stderr.contains("E_PROTOCOL") && sync.stderr.contains("QUEUED_UPLOAD"), "\(transport): \(sync.stderr)")
        #expect(server.requests.count == 1, "\(transport): \(server.requests.count) requests")
    }

    /// A connection reset while an upload's body goes: a passing E_NETWORK, never a crash
    /// (FoundationNetworking trapped on it when the body came from a file).
    @Test(arguments: ["nio", "urlsession"])
    func anUploadWhoseConnectionIsResetFailsWithACode(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let server = try HostileServer { _, _ in [.reset] }
        defer { server.stop() }
        let file = w.base.appendingPathComponent("p.bin")
        try Data(repeating: 2, count: 3 << 20).write(to: file)
        let app = w.base.appendingPathComponent("app.sqlite").path
        #expect(try await CLITests.run(["attachments", "save", "--db", app, "--remote", server.url("/att"), file.path]).status == 0)
        let sync = try await CLITests.run(["attachments", "sync", "--db", app, "--remote", server.url("/att"), "--transport", transport])
        #expect(sync.status == 3 && sync.stderr.contains("E_NETWORK") && !sync.stderr.contains("Fatal error"), "\(transport): \(sync.stderr)")
    }

    /// Names a server gives in Content-Disposition: the file lands in the folder asked for,
    /// under a name with no separator, no control character and no climbing; nothing is
    /// written anywhere else.
    @Test(arguments: [
        "attachment; filename=\"../evil.txt\"",
        "attachment; filename=\"/etc/evil.txt\"",
        "attachment; filename=\"..\"",
        "attachment; filename=\"evil\\u{7F}\\u{1B}[31m.txt\"",
        "attachment; filename*=UTF-8''..%2F..%2Fevil.txt",
        "attachment; filename*=UTF-8''evil%0D%0AX-Injected%3A%201.txt",
        "attachment; filename*=UTF-8''%2Fetc%2Fevil.txt",
        "attachment; filename*=UTF-8''..%5C..%5Cevil.txt",
    ], ["nio", "urlsession"])
    func contentDispositionNamesStayInTheirFolder(_ disposition: String, transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let value = disposition.replacingOccurrences(of: "\\u{7F}", with: "\u{7F}").replacingOccurrences(of: "\\u{1B}", with: "\u{1B}")
        let server = try HostileServer { _, _ in Self.reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Disposition: \(value)\r\n\r\nhello") }
        defer { server.stop() }
        let dir = w.out.appendingPathComponent("here")
        let run = try await CLITests.run(["get", server.url("/download"), "-d", dir.path, "--db", w.db, "--transport", transport, "-q"])
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }), run.status != 0 {
            // Raw control characters in a header: SwiftNIO's parser refuses the reply itself.
            #expect(run.stderr.contains("E_PROTOCOL") && names.isEmpty, "\(disposition) over \(transport): \(run.stderr)")
        } else {
            #expect(run.status == 0, "\(disposition) over \(transport): \(run.stderr)")
            #expect(names.count == 1, "\(disposition) over \(transport): \(names)")
        }
        for name in names {
            #expect(!name.contains("/") && !name.contains("\\") && name != "." && name != ".." && !name.hasPrefix(".."), "\(name.debugDescription)")
            #expect(!name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(name.debugDescription)")
            #expect((try? Data(contentsOf: dir.appendingPathComponent(name))) == Data("hello".utf8))
        }
        // Nothing beside the folder, nothing in /etc.
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.out.path) == ["here"])
        #expect(!FileManager.default.fileExists(atPath: "/etc/evil.txt"))
        #expect(server.requests.count <= 2, "\(server.requests.count) requests")   // HEAD for the name, then GET
        Self.expectNoBuildPath(run.stderr + run.stdout, disposition)
    }

    /// A header with a line break would smuggle a second header (or a second request) into
    /// the request: refused before any request is sent.
    @Test(arguments: ["X-Token: a\r\nX-Injected: 1", "X-Token: a\nHost: evil.example", "X-Token: a\rb"], ["nio", "urlsession"])
    func headerValuesWithLineBreaksAreRefusedBeforeAnyRequest(_ header: String, transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let server = try HostileServer { _, _ in Self.reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") }
        defer { server.stop() }
        let target = w.out.appendingPathComponent("f.bin")
        let run = try await CLITests.run(["get", server.url("/f.bin"), "-o", target.path, "-H", header, "--db", w.db, "--transport", transport, "-q"])
        #expect(run.status == 64 && run.stderr.contains("E_INVALID_ARGUMENT") && run.stderr.contains("line break"), "\(header.debugDescription) over \(transport): \(run.stderr)")
        #expect(server.connections == 0 && server.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    /// TLS: a redirect from https down to http, and a certificate nobody trusts, each one
    /// attempt and its code. (The origin serves TLS here; its log counts the requests.)
    @Test(.enabled(if: SelfSignedCertificate.isAvailable), arguments: ["nio", "urlsession"])
    func aDowngradeAndAnUntrustedCertificateAreOneAttemptEach(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("s.bin", size: 1000)
        let base = w.base
        let made = try await offThePool { try SelfSignedCertificate(in: base) }   // openssl: off the pool
        let origin = try await CourierOrigin.start(directory: w.served, tls: (made.certificate, made.key))
        defer { Task { try? await origin.stop() } }
        var downgrade = Fault()
        downgrade.redirectTo = w.origin.url("/s.bin")   // plain http
        origin.setFault(downgrade, for: "/s.bin")
        let target = w.out.appendingPathComponent("s.bin")
        var started = ContinuousClock.now
        // The downgrade needs the certificate trusted, which only --cacert does (the
        // FoundationNetworking build here reads no CA file of ours); the redirect rule is the
        // engine's (RedirectState), the same over both transports.
        if transport == "nio" {
            let down = try await CLITests.run(["get", origin.url("/s.bin"), "-o", target.path, "--db", w.db, "--transport", transport, "-q",
                                               "--cacert", made.certificate])
            print("hostile: https redirected to http over \(transport): \(down.stderr.split(separator: "\n").last ?? "") requests \(origin.requests.count) in \(ContinuousClock.now - started)")
            #expect(down.status == 3 && down.stderr.contains("E_INSECURE_REDIRECT"), "\(transport): \(down.stderr)")
            #expect(origin.requests.count == 1 && w.origin.requests.isEmpty, "\(transport): \(origin.requests.count) requests")
            #expect(!FileManager.default.fileExists(atPath: target.path))
            Self.expectNoBuildPath(down.stderr, "downgrade over \(transport)")
        }
        let before = origin.requests.count
        origin.setFault(Fault(), for: "/s.bin")
        started = ContinuousClock.now
        let untrusted = try await CLITests.run(["get", origin.url("/s.bin"), "-o", target.path, "--db", w.db, "--transport", transport, "-q"])
        print("hostile: untrusted certificate over \(transport): \(untrusted.stderr.split(separator: "\n").last ?? "") requests \(origin.requests.count - before) in \(ContinuousClock.now - started)")
        #expect(untrusted.status == 3 && untrusted.stderr.contains("E_TLS"), "\(transport): \(untrusted.stderr)")
        #expect(origin.requests.count == before, "\(transport): the handshake failed, yet the origin saw \(origin.requests.count - before) requests")
        #expect(!FileManager.default.fileExists(atPath: target.path))
        Self.expectNoBuildPath(untrusted.stderr, "untrusted certificate over \(transport)")
    }

    /// No message names a path of the machine that built the binary (every run is checked
    /// by CLITests.finish too).
    static func expectNoBuildPath(_ text: String, _ what: String) {
        for mark in ["/checkouts/", "/.build/", ".swift:", ".cc:", ".c:", "/Sources/"] {
            #expect(!text.contains(mark), "\(what): \(mark) in \(text)")
        }
    }
}
