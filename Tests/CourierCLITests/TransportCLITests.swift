import Courier
import CourierOrigin
import Foundation
import Testing

/// `courier get` behaves the same over either HTTP stack: resumes after a SIGKILL, never
/// splices a changed file, restarts when a range is answered with the whole file.
@Suite(.serialized) struct TransportCLITests {
    static let transports = ["nio", "urlsession"]

    /// Starts `get`, SIGKILLs it once its partial holds bytes, and returns the partial's length.
    private func killMidway(_ args: [String], partial: URL) async throws -> Int64 {
        let (p, out, err) = try CLITests.launch(args)
        let deadline = ContinuousClock.now + .seconds(20)
        var kept: Int64 = 0
        while ContinuousClock.now < deadline {
            kept = PartialFile.length(at: partial)
            if kept > 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        return PartialFile.length(at: partial)
    }

    @Test(arguments: transports) func aKilledGetResumesWithARange(_ transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 6 << 20)
        var stall = Fault(); stall.stallAfterBytes = 2 << 20
        w.origin.setFault(stall, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let args = ["get", w.origin.url("/f.bin"), "-o", target.path, "--transport", transport, "--db", w.db, "-q"]
        let kept = try await killMidway(args, partial: URL(fileURLWithPath: target.path + ".partial"))
        #expect(kept > 0 && !FileManager.default.fileExists(atPath: target.path))
        w.origin.setFault(nil, for: "/f.bin")
        w.origin.clearRequests()
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: target) == data)
        let gets = w.origin.requests.filter { $0.method == "GET" }
        #expect(gets.count == 1 && gets[0].range == "bytes=\(kept)-" && gets[0].ifRange != nil && gets[0].status == 206, "\(gets.map { ($0.range, $0.status) })")
        #expect(gets[0].bodyBytesSent == Int64(data.count) - kept)
    }

    @Test(arguments: transports) func aChangedFileIsNeverSplicedAndAWholeReplyRestarts(_ transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("f.bin", size: 6 << 20)
        var stall = Fault(); stall.stallAfterBytes = 2 << 20
        w.origin.setFault(stall, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let args = ["get", w.origin.url("/f.bin"), "-o", target.path, "--transport", transport, "--db", w.db, "-q"]
        _ = try await killMidway(args, partial: URL(fileURLWithPath: target.path + ".partial"))
        // The file changes on the server (new bytes, new validators): If-Range makes the
        // reply a 200, which replaces the partial from byte 0.
        var changed = Data(count: 5 << 20)
        for i in stride(from: 0, to: changed.count, by: 4096) { changed[i] = UInt8(truncatingIfNeeded: i / 4096 + 7) }
        try changed.write(to: w.served.appendingPathComponent("f.bin"))
        w.origin.setFault(nil, for: "/f.bin")
        w.origin.clearRequests()
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: target) == changed)
        #expect(w.origin.requests.filter { $0.method == "GET" }.last?.status == 200)

        // A server that ignores ranges: the whole reply restarts the file, never appended.
        var norange = Fault(); norange.stallAfterBytes = 2 << 20
        w.origin.setFault(norange, for: "/f.bin")
        try FileManager.default.removeItem(at: target)
        let args2 = ["get", w.origin.url("/f.bin"), "-o", target.path, "--transport", transport, "--db", w.db, "-q", "--id", "second"]
        _ = try await killMidway(args2, partial: URL(fileURLWithPath: target.path + ".partial"))
        var ignore = Fault(); ignore.ignoreRange = true
        w.origin.setFault(ignore, for: "/f.bin")
        let third = try await CLITests.run(args2)
        #expect(third.status == 0, "\(third.stderr)")
        #expect(try Data(contentsOf: target) == changed)
    }

    @Test func urlsessionRefusesTLSFlagsItCannotHonour() async throws {
        let r = try await CLITests.run(["get", "https://127.0.0.1:1/x", "--transport", "urlsession", "--insecure", "-o", "/tmp/x"])
        #expect(r.status == 64 && r.stderr.contains("need --transport nio"), "\(r.stderr)")
    }
}

/// Every command that downloads takes `--transport`: documents, attachments and media too.
/// (FoundationNetworking's requests carry libcurl in their User-Agent; AsyncHTTPClient's
/// none: the origin's log tells which stack asked.)
@Suite(.serialized) struct FeatureTransportCLITests {
    static func viaURLSession(_ request: OriginRequest) -> Bool { request.userAgent?.contains("curl") == true }

    @Test(arguments: TransportCLITests.transports) func docBytesGoesOverTheChosenStack(_ transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("doc.bin", size: 1 << 20)
        let dir = w.base.appendingPathComponent("mirror")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(#"{"key":"doc.bin","size":\#(data.count)}"#.utf8).write(to: dir.appendingPathComponent(".doc.bin.courier"))
        let run = try await CLITests.run(["doc", "bytes", "doc.bin", "--dir", dir.path, "--remote", w.origin.url(""), "--transport", transport])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdoutData == data)
        let gets = w.origin.requests.filter { $0.path == "/doc.bin" }
        #expect(!gets.isEmpty && gets.allSatisfy { Self.viaURLSession($0) == (transport == "urlsession") }, "\(gets.map(\.userAgent))")
    }

    @Test(arguments: TransportCLITests.transports) func mediaDownloadGoesOverTheChosenStack(_ transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try MediaCLITests().jellyfin(w, mediaSize: 1 << 20)
        let root = w.base.appendingPathComponent("lib")
        let run = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "--transport", transport, "film1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv")) == data)
        let media = w.origin.requests.filter { $0.path == "/Items/v1/Download" }
        #expect(!media.isEmpty && media.allSatisfy { Self.viaURLSession($0) == (transport == "urlsession") }, "\(media.map(\.userAgent))")
    }
    @Test(arguments: TransportCLITests.transports) func attachmentsSyncDownloadsOverTheChosenStack(_ transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let remoteDir = w.base.appendingPathComponent("remote")
        try FileManager.default.createDirectory(at: remoteDir, withIntermediateDirectories: true)
        let origin = try await CourierOrigin.start(directory: remoteDir, writable: true)
        defer { Task { try? await origin.stop() } }
        let remote = origin.url("/files")
        // Device A uploads a photo (over the default stack: uploads are the storage's own).
        let data = try w.serve("p.jpg", size: 1 << 20)
        let dbA = w.base.appendingPathComponent("a/app.sqlite").path
        try FileManager.default.createDirectory(atPath: (dbA as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let saved = try await CLITests.run(["attachments", "save", "--db", dbA, "--remote", remote, w.served.appendingPathComponent("p.jpg").path])
        let id = saved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(saved.status == 0 && !id.isEmpty, "\(saved.stderr)")
        #expect(try await CLITests.run(["attachments", "sync", "--db", dbA, "--remote", remote]).status == 0)
        // Device B references it; its sync downloads it through the engine, over `transport`.
        let dirB = w.base.appendingPathComponent("b")
        let dbB = try await AttachmentsCLITests.device(dirB, referencing: [id]).db
        origin.clearRequests()
        let sync = try await CLITests.run(["attachments", "sync", "--db", dbB, "--remote", remote, "--watch-sql", "SELECT photo_id FROM checklists",
                                           "--watch-extension", "jpg", "--transport", transport])
        #expect(sync.status == 0, "\(sync.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dirB.appendingPathComponent("attachments").path).filter { $0.hasPrefix(id) }
        #expect(names.count == 1 && (try? Data(contentsOf: dirB.appendingPathComponent("attachments/\(names[0])"))) == data, "\(names)")
        let gets = origin.requests.filter { $0.method == "GET" && $0.path.hasPrefix("/files/") }
        #expect(!gets.isEmpty && gets.allSatisfy { Self.viaURLSession($0) == (transport == "urlsession") }, "\(gets.map(\.userAgent))")
    }
}
