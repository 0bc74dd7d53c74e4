import Foundation
import CourierOrigin
#if canImport(Glibc)
import Glibc
#endif
import Testing

@Suite(.serialized) struct DocCLITests {
    @Test func docCommandsEndToEnd() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let remote = w.base.appendingPathComponent("remote")
        try FileManager.default.createDirectory(at: remote.appendingPathComponent("notes"), withIntermediateDirectories: true)
        try Data("hello from the remote\n".utf8).write(to: remote.appendingPathComponent("notes/hello.txt"))
        try Data([0, 1, 2, 255]).write(to: remote.appendingPathComponent("blob.bin"))
        let dir = w.base.appendingPathComponent("mirror")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let common = ["--dir", dir.path, "--remote", "file://" + remote.path]
        func doc(_ args: [String]) async throws -> CLITests.Result { try await CLITests.run(["doc"] + [args[0]] + common + Array(args.dropFirst())) }

        let placeholders = try await doc(["placeholders"])
        #expect(placeholders.status == 0 && placeholders.stdout.contains("notes/hello.txt"))
        #expect(try await doc(["exists", "notes/hello.txt"]).stdout == "yes\n")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("notes/hello.txt").path))
        #expect(try await doc(["read", "notes/hello.txt"]).stdout == "hello from the remote\n")
        #expect(try await doc(["bytes", "blob.bin"]).stdoutData == Data([0, 1, 2, 255]))

        let newFile = w.base.appendingPathComponent("new.txt")
        try Data("changed".utf8).write(to: newFile)
        #expect(try await doc(["write", "notes/hello.txt", newFile.path]).status == 0)
        #expect(try Data(contentsOf: remote.appendingPathComponent("notes/hello.txt")) == Data("changed".utf8))
        #expect(try await doc(["evict", "notes/hello.txt"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("notes/hello.txt").path))
        #expect(try await doc(["read", "notes/hello.txt"]).stdout == "changed")

        let missing = try await doc(["read", "nope.txt", "--json"])
        #expect(missing.status == 5 && missing.stdout.contains("\"code\" : \"E_FNF\""))
        let noFolder = try await doc(["write", "no/dir/x.txt", newFile.path, "--json"])
        #expect(noFolder.status == 5 && noFolder.stdout.contains("E_FNF_WRITE"))
        #expect(try await doc(["exists", "nope.txt"]).status == 6)
        try Data([0xFF, 0xFE]).write(to: remote.appendingPathComponent("bad.txt"))
        _ = try await doc(["placeholders"])
        let bad = try await doc(["read", "bad.txt"])
        #expect(bad.status == 5 && bad.stderr.contains("E_ENCODING"))
    }
}

/// `courier doc bytes` of a placeholder over HTTP, SIGKILLed mid-download: the next read
/// resumes from the partial (a range request) and returns the right bytes.
@Suite(.serialized) struct DocKillTests {
    @Test func aKilledReadResumesFromThePartial() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("big.bin", size: 12 << 20)
        // The body stops after 4 MiB until the kill, so the kill lands mid-download however
        // slowly this machine starts the process (20 s did not do, once, under a CPU hog).
        var stalled = Fault(); stalled.stallAfterBytes = 4 << 20; stalled.stallSeconds = 600
        w.origin.setFault(stalled, for: "/big.bin")
        let dir = w.base.appendingPathComponent("mirror")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        // The placeholder a listing would have made.
        try Data(#"{"key":"big.bin","size":\#(data.count)}"#.utf8).write(to: dir.appendingPathComponent(".big.bin.courier"))
        let args = ["doc", "bytes", "big.bin", "--dir", dir.path, "--remote", w.origin.url("")]

        func partialBytes() -> Int {
            let items = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.fileSizeKey], options: [])?.allObjects as? [URL] ?? []
            return items.filter { $0.lastPathComponent.hasSuffix(".partial") }
                .compactMap { try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize }.max() ?? 0
        }
        let (p, out, err) = try CLITests.launch(args)
        let deadline = ContinuousClock.now + .seconds(300)   // a hang's guard, not a window
        while partialBytes() < 3 << 20, p.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        let kept = partialBytes()
        #expect(kept >= 3 << 20 && kept < data.count)

        w.origin.setFault(nil, for: "/big.bin")
        w.origin.endStalls()   // the killed read's reply
        w.origin.clearRequests()
        let second = try await CLITests.run(args)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stdoutData == data)
        let first = try #require(w.origin.requests.first { $0.path == "/big.bin" })
        #expect(first.range.map { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") } == true, "\(first)")
    }

    /// Issue 28 point 4: a file the HTTP remote has and this mirror has never seen (no
    /// placeholder: HTTP cannot list) is asked of the remote and read; one the remote does not
    /// have is `E_FNF` because the remote said 404, which its log shows.
    @Test func aNeverSeenDocumentOverHTTPAsksTheRemote() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("report.bin", size: 300_000)
        let dir = w.base.appendingPathComponent("mirror")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let found = try await CLITests.run(["doc", "bytes", "report.bin", "--dir", dir.path, "--remote", w.origin.url("")])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdoutData == data)
        #expect(w.origin.requests.contains { $0.path == "/report.bin" && $0.method == "HEAD" && $0.status == 200 })

        w.origin.clearRequests()
        let missing = try await CLITests.run(["doc", "bytes", "gone.bin", "--dir", dir.path, "--remote", w.origin.url(""), "--json"])
        #expect(missing.status != 0)
        #expect(missing.stdout.contains("E_FNF"), "\(missing.stdout) \(missing.stderr)")
        #expect(w.origin.requests.map { "\($0.method) \($0.path) \($0.status)" } == ["HEAD /gone.bin 404"])   // the remote was asked, once
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).allSatisfy { !$0.contains("gone") })   // nothing made for it
    }
}
