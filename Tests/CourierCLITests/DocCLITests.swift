import Foundation
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
