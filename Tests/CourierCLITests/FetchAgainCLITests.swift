import CourierOrigin
import Foundation
import Testing

/// `courier get` run again for a file it finished: the result is always the server's
/// current file for that URL, and an unchanged file costs one conditional request.
@Suite(.serialized) struct FetchAgainCLITests {
    private func write(_ text: String, to url: URL, mtime: TimeInterval) throws {
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: mtime)], ofItemAtPath: url.path)
    }

    private func gets(_ w: CLITests.World, _ path: String) -> [OriginRequest] {
        w.origin.requests.filter { $0.path == path && $0.method == "GET" }
    }

    @Test func anUnchangedFileCostsOneConditionalRequestAndNoBody() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        try write("version one\n", to: w.served.appendingPathComponent("hello.txt"), mtime: 1_700_000_000)
        let target = w.out.appendingPathComponent("hello.txt").path
        let args = ["get", w.origin.url("/hello.txt"), "-o", target, "--db", w.db]
        #expect(try await CLITests.run(args).status == 0)
        w.origin.clearRequests()

        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("already up to date"), "\(again.stdout)")
        let requests = gets(w, "/hello.txt")
        #expect(requests.count == 1 && requests[0].status == 304 && requests[0].bodyBytesSent == 0, "\(requests)")
        #expect(requests[0].ifNoneMatch != nil)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "version one\n")
        #expect(!FileManager.default.fileExists(atPath: target + ".partial"))
    }

    @Test func aFileChangedOnTheServerIsFetchedAgainAndReplacesTheOldOne() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let served = w.served.appendingPathComponent("hello.txt")
        try write("version one\n", to: served, mtime: 1_700_000_000)
        let target = w.out.appendingPathComponent("hello.txt").path
        let args = ["get", w.origin.url("/hello.txt"), "-o", target, "--db", w.db]
        #expect(try await CLITests.run(args).status == 0)

        // Same size, other bytes, a later date: the case a size check would miss.
        try write("version two\n", to: served, mtime: 1_700_000_100)
        w.origin.clearRequests()
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!again.stdout.contains("already up to date"))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "version two\n")
        let requests = gets(w, "/hello.txt")
        #expect(requests.count == 1 && requests[0].status == 200 && requests[0].ifNoneMatch != nil && requests[0].range == nil, "\(requests)")
    }

    @Test func anotherURLToTheSameOutputGivesThatURLsFile() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("a"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("b"), withIntermediateDirectories: true)
        try write("from A\n", to: w.served.appendingPathComponent("a/hello.txt"), mtime: 1_700_000_000)
        try write("from B\n", to: w.served.appendingPathComponent("b/hello.txt"), mtime: 1_700_000_000)
        // No -o: both save to ./hello.txt, as `courier get http://A/hello.txt` then `…B/hello.txt` would.
        let first = try await CLITests.run(["get", w.origin.url("/a/hello.txt"), "--db", w.db], cwd: w.out)
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await CLITests.run(["get", w.origin.url("/b/hello.txt"), "--db", w.db], cwd: w.out)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stderr.contains("Resuming"))
        #expect(try String(contentsOf: w.out.appendingPathComponent("hello.txt"), encoding: .utf8) == "from B\n")
        // And B's request asked for the whole file, with no condition borrowed from A's.
        let b = gets(w, "/b/hello.txt")
        #expect(b.count == 1 && b[0].status == 200 && b[0].ifNoneMatch == nil && b[0].range == nil, "\(b)")
    }
}
