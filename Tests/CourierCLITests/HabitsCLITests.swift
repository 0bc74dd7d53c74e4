import CourierTestSupport
import CourierOrigin
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The habits a curl or aria2 user brings, each decided, documented in `--help`, and run
/// here end to end against the built binary.
@Suite(.serialized) struct HabitsCLITests {
    typealias World = CLITests.World
    private func run(_ args: [String], cwd: URL? = nil) async throws -> CLITests.Result { try await CLITests.run(args, cwd: cwd) }

    @Test func headersGoToTheOriginAndAreNeverStored() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("private.bin", size: 200_000)
        w.origin.requireAuthorization("Bearer PLANTED-TOKEN")
        let target = w.out.appendingPathComponent("private.bin").path
        let denied = try await run(["get", w.origin.url("/private.bin"), "-o", target, "--db", w.db])
        #expect(denied.status == 3 && denied.stderr.contains("E_ACCESS_DENIED"), "\(denied.stderr)")
        let got = try await run(["get", w.origin.url("/private.bin"), "-o", target, "-H", "Authorization: Bearer PLANTED-TOKEN", "--db", w.db])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == data)
        #expect(w.origin.requests.contains { $0.authorization == "Bearer PLANTED-TOKEN" })
        // resume takes -H too (the failed attempt above left a record to resume).
        let again = try await run(["resume", "--all", "-H", "Authorization: Bearer PLANTED-TOKEN", "--db", w.db])
        #expect(again.status == 0, "\(again.stderr)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: w.db)) + ((try? Data(contentsOf: URL(fileURLWithPath: w.db + "-wal"))) ?? Data())
        #expect(stored.range(of: Data("PLANTED-TOKEN".utf8)) == nil)
        let bad = try await run(["get", w.origin.url("/private.bin"), "-H", "no colon here", "--db", w.db])
        #expect(bad.status == 64)
    }

    @Test func dashOhDashStreamsToStdout() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("s.bin", size: 300_000)
        let r = try await run(["get", w.origin.url("/s.bin"), "-o", "-", "--db", w.db])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdoutData == data)
        #expect(!FileManager.default.fileExists(atPath: w.db))   // nothing recorded: nothing to resume
        let missing = try await run(["get", w.origin.url("/none.bin"), "-o", "-"])
        #expect(missing.status == 3 && missing.stderr.contains("E_HTTP_4XX") && missing.stdoutData.isEmpty)
    }

    @Test func remoteNameSeveralURLsAndADirectory() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let a = try w.serve("a.bin", size: 100_000)
        let cwd = w.out.appendingPathComponent("cwd")
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        // -O: named after the URL, in the current directory (curl's habit; also the default).
        let o = try await run(["get", "-O", w.origin.url("/a.bin"), "--db", w.db], cwd: cwd)
        #expect(o.status == 0, "\(o.stderr)")
        #expect(try Data(contentsOf: cwd.appendingPathComponent("a.bin")) == a)
        // Several URLs: several files, into -d (made if missing).
        try Data("b".utf8).write(to: w.served.appendingPathComponent("b.txt"))
        let many = try await run(["get", w.origin.url("/a.bin"), w.origin.url("/b.txt"), "-d", w.out.appendingPathComponent("many/deep").path, "--db", w.db])
        #expect(many.status == 0, "\(many.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("many/deep/a.bin")) == a)
        #expect(try String(contentsOf: w.out.appendingPathComponent("many/deep/b.txt"), encoding: .utf8) == "b")
        // -d for a single URL.
        let single = try await run(["get", w.origin.url("/b.txt"), "-d", w.out.appendingPathComponent("one").path, "--db", w.db])
        #expect(single.status == 0 && FileManager.default.fileExists(atPath: w.out.appendingPathComponent("one/b.txt").path))
        // -o with several URLs is refused before anything happens.
        let mixed = try await run(["get", w.origin.url("/a.bin"), w.origin.url("/b.txt"), "-o", "x", "--db", w.db])
        #expect(mixed.status == 64)
    }

    @Test func dashOhAnExistingFolderSavesIntoItAndAMissingOneFailsBeforeDownloading() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 50_000)
        let folder = w.out.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let into = try await run(["get", w.origin.url("/f.bin"), "-o", folder.path, "--db", w.db])
        #expect(into.status == 0, "\(into.stderr)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("f.bin")) == data)
        w.origin.clearRequests()
        let missing = try await run(["get", w.origin.url("/f.bin"), "-o", w.out.appendingPathComponent("nope").path + "/", "--db", w.db])
        #expect(missing.status == 64 && missing.stderr.contains("E_INVALID_PATH"), "\(missing.stderr)")
        #expect(w.origin.requests.filter { $0.method == "GET" }.isEmpty)
    }

    @Test func limitRateAndSizesWithSuffixes() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let data = try w.serve("r.bin", size: 1 << 20)
        let started = ContinuousClock.now
        let limited = try await run(["get", w.origin.url("/r.bin"), "-o", w.out.appendingPathComponent("r.bin").path, "--limit-rate", "512K", "--db", w.db])
        let elapsed = ContinuousClock.now - started
        #expect(limited.status == 0, "\(limited.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("r.bin")) == data)
        // A lower bound only (1 MiB at 512 KiB/s cannot take less than ~2 s); a loaded machine is slower, never faster.
        #expect(elapsed >= .milliseconds(1800), "\(elapsed)")
        let tooBig = try await run(["get", w.origin.url("/r.bin"), "-o", w.out.appendingPathComponent("big.bin").path, "--max-size", "10K", "--db", w.db])
        #expect(tooBig.status == 4 && tooBig.stderr.contains("E_BODY_TOO_LONG"), "\(tooBig.stderr)")
        let badSize = try await run(["get", w.origin.url("/r.bin"), "--max-size", "ten", "--db", w.db])
        #expect(badSize.status == 64)
    }

    @Test func aRefusedConnectionFailsFastWithEveryRetryShown() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let port = try Self.closedPort()
        let started = ContinuousClock.now
        let r = try await run(["get", "http://127.0.0.1:\(port)/x.bin", "-o", w.out.appendingPathComponent("x.bin").path, "--db", w.db])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("E_CONNECTION_REFUSED") && r.stderr.contains("127.0.0.1:\(port)"))
        #expect(r.stderr.contains("retry 1 of 2") && r.stderr.contains("retry 2 of 2"), "\(r.stderr)")
        #expect(r.stderr.contains("x.bin:") && !r.stderr.contains("get-"), "errors name the file, not the id: \(r.stderr)")
        #expect(ContinuousClock.now - started < .seconds(30))   // the bound, not a benchmark: ~3 s here
    }

    /// The interleaving CI once hit (a loaded run, 619e27a): the refused connection's first
    /// retry was said before the command's watcher subscribed, and "retry 1 of 2" was never
    /// printed. Here the watcher starts 2.5 s late every time (a test hook): every retry is
    /// still shown, because the command subscribes before it enqueues.
    @Test func aWatcherThatStartsLateStillShowsEveryRetry() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let port = try Self.closedPort()
        let r = try await CLITests.run(["get", "http://127.0.0.1:\(port)/x.bin", "-o", w.out.appendingPathComponent("x.bin").path, "--db", w.db],
                                       environment: ["COURIER_TEST_WATCH_DELAY_MS": "2500"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("retry 1 of 2") && r.stderr.contains("retry 2 of 2"), "\(r.stderr)")
    }

    @Test func ctrlCDuringTheFirstAttemptPauses() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        _ = try w.serve("slow.bin", size: 100_000)
        var hang = Fault(); hang.stallAfterBytes = 0          // headers, then nothing: the first attempt hangs
        w.origin.setFault(hang, for: "/slow.bin")
        let (p, out, err) = try CLITests.launch(["get", w.origin.url("/slow.bin"), "-o", w.out.appendingPathComponent("slow.bin").path, "--db", w.db])
        #expect(await w.origin.waitForRequests { $0.contains { $0.method == "GET" } })
        kill(p.processIdentifier, SIGINT)
        let r = await CLITests.finish(p, out, err)
        #expect(r.status == 130, "\(r.stderr)")
        #expect(r.stderr.contains("Paused slow.bin"), "\(r.stderr)")
    }

    @Test func readingCommandsCreateNothingAndFailuresHaveCodes() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let db = w.base.appendingPathComponent("never/made.sqlite").path
        #expect(try await run(["list", "--db", db]).stdout.contains("No downloads."))
        let json = try await run(["list", "--json", "--db", db])
        #expect(json.status == 0 && json.stdout.filter { !$0.isWhitespace } == "[]")
        let status = try await run(["status", "nope", "--json", "--db", db])
        #expect(status.status == 6 && status.stdout.contains("\"ok\" : false") && status.stdout.contains("\"code\" : \"E_NOT_FOUND\""))
        #expect(try await run(["pause", "nope", "--db", db]).status == 6)
        #expect(try await run(["cancel", "nope", "--db", db]).status == 6)
        #expect(!FileManager.default.fileExists(atPath: w.base.appendingPathComponent("never").path))
        let typo = w.base.appendingPathComponent("typo").path
        let media = try await run(["media", "list", "--root", typo, "--json"])
        #expect(media.status == 6 && media.stdout.contains("\"ok\" : false"), "\(media.stdout)")
        #expect(try await run(["media", "size", "--root", typo]).status == 6)
        #expect(!FileManager.default.fileExists(atPath: typo))
        // media remove of nothing says so.
        let library = w.base.appendingPathComponent("library").path
        try FileManager.default.createDirectory(atPath: library + "/Downloads", withIntermediateDirectories: true)
        let removed = try await run(["media", "remove", "--root", library, "nothing"])
        #expect(removed.status == 6 && removed.stderr.contains("E_NOT_FOUND"), "\(removed.stderr)")
        // media download against a dead server: a code, and the network exit status.
        let dead = try await run(["media", "download", "--root", library, "--server", "http://127.0.0.1:\(try Self.closedPort())", "item1"])
        #expect(dead.status == 3 && dead.stderr.contains("E_CONNECTION_REFUSED"), "\(dead.stderr)")
        // serve on a busy port names the port.
        let busy = try await run(["serve", w.served.path, "--port", String(w.origin.port)])
        #expect(busy.status == 64 && busy.stderr.contains("port \(w.origin.port)"), "\(busy.stderr)")
    }

    @Test func jsonHasRealBooleansAndNumbers() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("docs"), withIntermediateDirectories: true)
        try Data("hi".utf8).write(to: w.served.appendingPathComponent("docs/a.txt"))
        let dir = w.out.appendingPathComponent("docs").path
        let remote = "file://" + w.served.appendingPathComponent("docs").path
        func doc(_ args: [String]) async throws -> CLITests.Result { try await run(["doc"] + args + ["--dir", dir, "--remote", remote, "--json"]) }
        let placeholders = try await doc(["placeholders"])
        #expect(placeholders.stdout.contains("\"created\" : 1") && placeholders.stdout.contains("\"ok\" : true"), "\(placeholders.stdout)")
        let exists = try await doc(["exists", "a.txt"])
        #expect(exists.stdout.contains("\"exists\" : true"), "\(exists.stdout)")
        let missing = try await doc(["exists", "b.txt"])
        #expect(missing.status == 6 && missing.stdout.contains("\"exists\" : false"))
        let failed = try await doc(["read", "zzz.txt"])
        #expect(failed.stdout.contains("\"ok\" : false") && failed.stdout.contains("\"code\" : \"E_FNF"), "\(failed.stdout)")
        for r in [placeholders, exists, missing, failed] { #expect(!r.stdout.contains("\"true\"") && !r.stdout.contains("\"false\"")) }
    }

    @Test func helpShowsOnlyFlagsThatApply() async throws {
        let pause = try await run(["pause", "--help"])
        #expect(!pause.stdout.contains("--max-attempts") && !pause.stdout.contains("--idle-timeout") && pause.stdout.contains("--db"))
        let cancel = try await run(["cancel", "--help"])
        #expect(!cancel.stdout.contains("--connect-timeout"))
        let media = try await run(["media", "download", "--help"])
        // One --version only: the program's (no option of its own takes that name any more).
        #expect(media.stdout.contains("--version-id <version-id>") && !media.stdout.contains("--version <"))
        let get = try await run(["get", "--help"])
        #expect(get.stdout.contains("-k, --insecure") && get.stdout.contains("--limit-rate") && get.stdout.contains("-H, --header"))
        for text in [pause.stdout, media.stdout, get.stdout, try await run(["--help"]).stdout, try await run(["open", "--help"]).stdout] {
            #expect(!text.lowercased().contains("seed 00"), "help speaks of behaviour, not of seeds")
        }
    }

    @Test func statusShowsThePartialsRealBytesAndListCutsNothing() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        _ = try w.serve("p.bin", size: 4 << 20)
        var hang = Fault(); hang.stallAfterBytes = 3 << 20
        w.origin.setFault(hang, for: "/p.bin")
        let longID = "a-download-id-of-sixty-characters-that-list-must-not-cut-0001"
        let target = w.out.appendingPathComponent("p.bin").path
        let (p, out, err) = try CLITests.launch(["get", w.origin.url("/p.bin"), "-o", target, "--id", longID, "--db", w.db])
        let deadline = ContinuousClock.now + .seconds(30)
        func partial() -> Int64 { ((try? FileManager.default.attributesOfItem(atPath: target + ".partial"))?[.size] as? Int64) ?? 0 }
        while partial() < 2 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        kill(p.processIdentifier, SIGKILL)   // the record lags the file by up to a second
        _ = await CLITests.finish(p, out, err)
        let status = try await run(["status", longID, "--json", "--db", w.db])
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect((json?["bytesReceived"] as? NSNumber)?.int64Value == partial(), "\(status.stdout)")
        let list = try await run(["list", "--db", w.db])
        #expect(list.stdout.contains(longID) && list.stdout.contains(target), "\(list.stdout)")
    }

    /// A port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int { closedLoopbackPort() }
}
