import Foundation
import CourierOrigin
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `courier doc` as an app would live it: a long read on a slow link, a write killed before
/// its upload, a permanent refusal, and no lock file left beside the user's documents.
@Suite(.serialized) struct DocDurabilityCLITests {
    final class Mirror: @unchecked Sendable { // one test at a time
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-doccli-\(UUID().uuidString)")
        var remote: URL { base.appendingPathComponent("remote") }
        var dir: URL { base.appendingPathComponent("mirror") }
        var origin: CourierOrigin!

        init() async throws {
            try FileManager.default.createDirectory(at: remote.appendingPathComponent("docs"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("docs"), withIntermediateDirectories: true)
            origin = try await CourierOrigin.start(directory: remote, writable: true)
        }

        func doc(_ command: String, _ args: [String] = []) -> [String] {
            ["doc", command, "--dir", dir.path, "--remote", origin.url("")] + args
        }

        /// The placeholder a listing would have made (an HTTP remote cannot list).
        func placeholder(_ key: String, size: Int) throws {
            let url = dir.appendingPathComponent(key)
            try Data(#"{"key":"\#(key)","size":\#(size)}"#.utf8)
                .write(to: url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).courier"))
        }

        func close() async {
            try? await origin.stop()
            try? FileManager.default.removeItem(at: base)
        }

        /// Every file of the mirror outside its hidden `.courier/` folder.
        func visibleFiles() -> [String] {
            let all = FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? []
            return all.filter { !$0.hasPrefix(".courier/") && $0 != ".courier" }.sorted()
        }
    }

    @Test func aWriteKilledBeforeItsUploadIsUploadedByTheNextProcess() async throws {
        let m = try await Mirror()
        defer { Task { await m.close() } }
        let file = m.base.appendingPathComponent("new.txt")
        try Data("written, then killed".utf8).write(to: file)
        // The remote refuses for now (503: a passing error, retried with backoff).
        var down = Fault(); down.failStatus = 503
        m.origin.setFault(down, for: "/docs/k.txt")
        let (p, out, err) = try CLITests.launch(m.doc("write", ["docs/k.txt", file.path]))
        #expect(await m.origin.waitForRequests { $0.contains { $0.method == "PUT" && $0.status == 503 } })
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        #expect(!FileManager.default.fileExists(atPath: m.remote.appendingPathComponent("docs/k.txt").path))
        let status = try await CLITests.run(m.doc("status", ["--json"]))
        #expect(status.stdout.contains("\"path\" : \"docs/k.txt\"") && status.stdout.contains("\"state\" : \"pending\""), "\(status.stdout)")

        m.origin.setFault(nil, for: "/docs/k.txt")
        let sync = try await CLITests.run(m.doc("sync"))
        #expect(sync.status == 0, "stderr: \(sync.stderr)")
        #expect(try Data(contentsOf: m.remote.appendingPathComponent("docs/k.txt")) == Data("written, then killed".utf8))
        #expect(try await CLITests.run(m.doc("status")).stdout == "")   // nothing owed
    }

    @Test func aPermanentRefusalEndsWithACodeOnce() async throws {
        let m = try await Mirror()
        defer { Task { await m.close() } }
        let file = m.base.appendingPathComponent("x.txt")
        try Data("x".utf8).write(to: file)
        var denied = Fault(); denied.failStatus = 403
        m.origin.setFault(denied, for: "/docs/x.txt")
        let write = try await CLITests.run(m.doc("write", ["docs/x.txt", file.path]))
        #expect(write.status == 0)   // the local write stands
        #expect(write.stdout.contains("failed") && write.stdout.contains("403"), "\(write.stdout)")
        #expect(m.origin.requests.filter { $0.method == "PUT" }.count == 1)
        let status = try await CLITests.run(m.doc("status", ["docs/x.txt"]))
        #expect(status.stdout.hasPrefix("docs/x.txt  failed  E_REMOTE_STORAGE"), "\(status.stdout)")
    }

    @Test func noLockFileBesideADocumentAfterAnyCommand() async throws {
        let m = try await Mirror()
        defer { Task { await m.close() } }
        try Data("remote text".utf8).write(to: m.remote.appendingPathComponent("docs/a.txt"))
        try m.placeholder("docs/a.txt", size: 11)
        let file = m.base.appendingPathComponent("w.txt")
        try Data("local text".utf8).write(to: file)
        for args in [m.doc("exists", ["docs/a.txt"]), m.doc("read", ["docs/a.txt"]), m.doc("bytes", ["docs/a.txt"]),
                     m.doc("write", ["docs/a.txt", file.path]), m.doc("progress", ["docs/a.txt"]), m.doc("status"), m.doc("sync"),
                     m.doc("evict", ["docs/a.txt"]), m.doc("read", ["docs/a.txt"])] {
            let result = try await CLITests.run(args)
            #expect(result.status == 0, "\(args): \(result.stderr)")
            #expect(!m.visibleFiles().contains { $0.contains("courier-lock") || $0.contains(".upload") }, "\(args): \(m.visibleFiles())")
        }
        #expect(m.visibleFiles() == [".courier-documents.sqlite", ".courier-documents.sqlite-shm", ".courier-documents.sqlite-wal", "docs", "docs/a.txt"]
                || m.visibleFiles() == [".courier-documents.sqlite", "docs", "docs/a.txt"], "\(m.visibleFiles())")
    }
}

/// A 1 s idle window on a real slow link: run alone (scripts/test runs the `…TimingTests`
/// suites after the rest), since a loaded machine can starve the origin for longer.
@Suite(.serialized) struct DocCLITimingTests {
    @Test func aSixMiBDocumentAtOneMiBPerSecondReadsWholeWithAOneSecondIdleWindow() async throws {
        let m = try await DocDurabilityCLITests.Mirror()
        defer { Task { await m.close() } }
        let block = Data((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) })
        let body = (0..<96).reduce(into: Data()) { data, i in data.append(block); data[data.count - 1] = UInt8(i) }
        try body.write(to: m.remote.appendingPathComponent("docs/big.bin"))
        var slow = Fault(); slow.bytesPerSecond = 1 << 20
        m.origin.setFault(slow, for: "/docs/big.bin")
        try m.placeholder("docs/big.bin", size: body.count)
        let read = try await CLITests.run(m.doc("bytes", ["docs/big.bin", "--idle-timeout", "1", "--retries", "1"]))
        #expect(read.status == 0, "stderr: \(read.stderr)")
        let whole = read.stdoutData == body   // a Bool: a failing #expect on 6 MiB values would diff them for minutes
        #expect(whole, "\(read.stdoutData.count) of \(body.count) bytes")
        #expect(m.origin.requests.filter { $0.method == "GET" }.count == 1)   // never re-triggered
    }
}
