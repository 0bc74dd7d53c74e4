import CourierTestSupport
import Courier
import CourierAttachments
import CourierOrigin
import Foundation
import Testing
@testable import CourierDocuments

/// A write's upload is owed in the database until the remote has it: it survives the
/// process, gives up with a code on permanent errors, never overwrites a newer remote
/// version (a conflict keeps both), and a read refreshes a copy whose remote changed.
@Suite(.serialized) struct DurableUploadTests {
    /// A second container over the same folder and database: the app after a relaunch.
    static func relaunch(_ w: DocWorld) async throws -> MirrorContainer {
        await w.container.shutdown()
        let storage = try HTTPRemoteStorage(baseURL: w.origin.url("/"), transport: testTransport())
        w.container = try MirrorContainer(root: w.local, storage: storage, database: try CourierDatabase(path: w.base.appendingPathComponent("c.sqlite").path), configure: {
            $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(20), maxDelay: .milliseconds(50), maxAttempts: 3)
        }, transport: testTransport())
        return w.container
    }

    static func puts(_ w: DocWorld, _ path: String) -> [OriginRequest] { w.origin.requests.filter { $0.method == "PUT" && $0.path == path } }

    @Test func aWriteNotUploadedBeforeTheProcessEndsIsUploadedByTheNext() async throws {
        let w = try await DocWorld.http { $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(20), maxDelay: .milliseconds(50), maxAttempts: 2) }
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.local.appendingPathComponent("docs"), withIntermediateDirectories: true)
        var down = Fault(); down.failStatus = 503
        w.origin.setFault(down, for: "/docs/n.txt")
        try await w.documents().writeInPlace("docs/n.txt", data: Data("first".utf8))
        await w.container.flushUploads()
        guard case .failed(let e)? = await w.container.state(of: "docs/n.txt").upload else { Issue.record("not failed"); return }
        #expect(e.code == .httpServerError)   // a passing error: given up for this launch only
        #expect(Self.puts(w, "/docs/n.txt").count == 2)
        w.origin.setFault(nil, for: "/docs/n.txt")
        let next = try await Self.relaunch(w)
        #expect(try await next.resumeUploads() == ["docs/n.txt"])
        await next.flushUploads()
        #expect(try Data(contentsOf: w.remoteDir.appendingPathComponent("docs/n.txt")) == Data("first".utf8))
        #expect(await next.state(of: "docs/n.txt").upload == nil)
        #expect(try await next.uploads().isEmpty)
    }

    @Test func aPermanentErrorEndsWithACodeAndNoLoop() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.local.appendingPathComponent("docs"), withIntermediateDirectories: true)
        var denied = Fault(); denied.failStatus = 403
        w.origin.setFault(denied, for: "/docs/d.txt")
        try await w.documents().writeInPlace("docs/d.txt", data: Data("x".utf8))
        await w.container.flushUploads()
        #expect(Self.puts(w, "/docs/d.txt").count == 1)
        let state = await w.container.state(of: "docs/d.txt")
        #expect(state.uploadFailure?.httpStatus == 403)
        // A relaunch does not retry a permanent failure; asking does.
        let next = try await Self.relaunch(w)
        #expect(try await next.resumeUploads().isEmpty)
        w.origin.setFault(nil, for: "/docs/d.txt")
        try await next.retryUpload("docs/d.txt")
        await next.flushUploads()
        #expect(try Data(contentsOf: w.remoteDir.appendingPathComponent("docs/d.txt")) == Data("x".utf8))
    }

    @Test func aRemoteChangedSinceTheDownloadIsAConflictThatKeepsBoth() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/c.txt", Data("original".utf8))
        try w.placeholder("docs/c.txt", size: 8)
        let docs = w.documents()
        #expect(try await docs.readInPlace("docs/c.txt") == "original")
        try w.remote("docs/c.txt", Data("their longer change".utf8))   // someone else's upload
        try await docs.writeInPlace("docs/c.txt", data: Data("my change".utf8))
        await w.container.flushUploads()
        // Nothing was overwritten: the remote keeps theirs, the local file keeps mine, and
        // theirs is beside mine.
        #expect(try String(contentsOf: w.remoteDir.appendingPathComponent("docs/c.txt"), encoding: .utf8) == "their longer change")
        #expect(try String(contentsOf: w.local.appendingPathComponent("docs/c.txt"), encoding: .utf8) == "my change")
        guard case .conflict(let copy)? = await w.container.state(of: "docs/c.txt").upload else { Issue.record("no conflict"); return }
        #expect(copy.hasPrefix("docs/c (conflict ") && copy.hasSuffix(").txt"))
        #expect(try String(contentsOf: w.local.appendingPathComponent(copy), encoding: .utf8) == "their longer change")
        #expect(Self.puts(w, "/docs/c.txt").map(\.status) == [412])
        #expect(await w.container.state(of: "docs/c.txt").uploadFailure?.code == .conflict)
        // Writing again resolves it: that upload replaces the version the copy shows.
        try await docs.writeInPlace("docs/c.txt", data: Data("merged".utf8))
        await w.container.flushUploads()
        #expect(try String(contentsOf: w.remoteDir.appendingPathComponent("docs/c.txt"), encoding: .utf8) == "merged")
        #expect(await w.container.state(of: "docs/c.txt").upload == nil)
    }

    /// A power cut after the remote took the upload, before the commit saying so: the
    /// record is back to owing it over the old version. The remote's bytes are the owed
    /// ones, so the next launch records them sent: no conflict, no copy.
    @Test func anUploadWhoseRecordACutTookBackIsNotAConflict() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/s.txt", Data("original".utf8))
        try w.placeholder("docs/s.txt", size: 8)
        let docs = w.documents()
        #expect(try await docs.readInPlace("docs/s.txt") == "original")
        let old = try #require(try await w.container.sync.row("docs/s.txt")).base
        try await docs.writeInPlace("docs/s.txt", data: Data("mine, sent".utf8))
        await w.container.flushUploads()
        #expect(await w.container.state(of: "docs/s.txt").upload == nil)
        try await w.container.sync.writer.write { db in
            try db.execute(sql: "UPDATE courierDocumentSync SET state = 'pending', base = ? WHERE path = ?", arguments: [old, "docs/s.txt"])
        }
        let next = try await Self.relaunch(w)
        #expect(try await next.resumeUploads() == ["docs/s.txt"])
        await next.flushUploads()
        #expect(Self.puts(w, "/docs/s.txt").map(\.status).last == 412)   // the precondition refused it: the remote moved on
        #expect(await next.state(of: "docs/s.txt").upload == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.local.appendingPathComponent("docs").path) == ["s.txt"])
        // Recorded over the remote's version: the next write is sent over it, not refused.
        try await w.documents().writeInPlace("docs/s.txt", data: Data("mine, again".utf8))
        await next.flushUploads()
        #expect(try String(contentsOf: w.remoteDir.appendingPathComponent("docs/s.txt"), encoding: .utf8) == "mine, again")
    }

    @Test func aNewDocumentNeverOverwritesOneCreatedElsewhere() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.local.appendingPathComponent("docs"), withIntermediateDirectories: true)
        try w.remote("docs/new.txt", Data("created on another device".utf8))
        try await w.documents().writeInPlace("docs/new.txt", data: Data("created here".utf8))
        await w.container.flushUploads()
        #expect(try String(contentsOf: w.remoteDir.appendingPathComponent("docs/new.txt"), encoding: .utf8) == "created on another device")
        guard case .conflict? = await w.container.state(of: "docs/new.txt").upload else { Issue.record("no conflict"); return }
    }

    @Test func openingRefreshesAChangedRemoteAndReadsLocallyOffline() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/r.txt", Data("v1".utf8))
        try w.placeholder("docs/r.txt", size: 2)
        let docs = w.documents()
        #expect(try await docs.readInPlace("docs/r.txt") == "v1")
        try w.remote("docs/r.txt", Data("version two".utf8))
        #expect(try await docs.readInPlace("docs/r.txt") == "version two")
        // A local change owed wins over the remote until it is sent.
        var down = Fault(); down.failStatus = 503
        w.origin.setFault(down, for: "/docs/r.txt")
        try await docs.writeInPlace("docs/r.txt", data: Data("mine".utf8))
        #expect(try await docs.readInPlace("docs/r.txt") == "mine")
        await w.container.flushUploads()
        // Offline: the local copy.
        try await w.origin.stop()
        #expect(try await docs.readInPlace("docs/r.txt") == "mine")
    }

    /// A download lands in the hidden folder and is put in place only if nothing was
    /// written meanwhile: a write made while the placeholder downloads is never replaced.
    @Test func aWriteDuringTheDownloadIsNeverReplacedByIt() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/w.bin", Data(count: 1 << 20))
        var slow = Fault(); slow.bytesPerSecond = 1 << 20
        w.origin.setFault(slow, for: "/docs/w.bin")
        try w.placeholder("docs/w.bin", size: 1 << 20)
        try await w.container.startDownloading("docs/w.bin", restart: false)
        #expect(await w.origin.waitForRequests { $0.contains { $0.method == "GET" && $0.bodyBytesSent > 0 } })
        try await w.documents().writeInPlace("docs/w.bin", data: Data("mine".utf8))
        // The transfer's task removes its own entry as its last step.
        while let transfer = w.container.transfers.withLock({ $0["docs/w.bin"]?.task }) { await transfer.value }
        #expect(try Data(contentsOf: w.local.appendingPathComponent("docs/w.bin")) == Data("mine".utf8))
        await w.container.flushUploads()
        #expect(try Data(contentsOf: w.remoteDir.appendingPathComponent("docs/w.bin")) == Data("mine".utf8))
    }

    @Test func noLockOrSnapshotBesideTheDocuments() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/l.txt", Data("l".utf8))
        try w.placeholder("docs/l.txt", size: 1)
        let docs = w.documents()
        _ = try await docs.readInPlace("docs/l.txt")
        try await docs.writeInPlace("docs/l.txt", data: Data("ll".utf8))
        await w.container.flushUploads()
        let names = try FileManager.default.contentsOfDirectory(atPath: w.local.appendingPathComponent("docs").path)
        #expect(names == ["l.txt"])
    }

    @Test func conflictCopiesAreNamedBesideTheDocument() {
        let date = Date(timeIntervalSince1970: 1_764_079_387)   // 2025-11-25 14:03:07 UTC
        #expect(ConflictCopy.path(for: "docs/report.final.txt", at: date) == "docs/report.final (conflict 2025-11-25 14.03.07).txt")
        #expect(ConflictCopy.path(for: "README", at: date) == "README (conflict 2025-11-25 14.03.07)")
    }
}

/// The watchdog on real slow transfers: 1 s idle windows, so these run alone (scripts/test
/// runs the `…TimingTests` suites after the rest, on a machine no other test loads).
@Suite(.serialized) struct DocumentTimingTests {
    @Test func aHealthyLongReadIsNeverIdle() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        let block = Data((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) })
        let body = (0..<96).reduce(into: Data()) { data, i in data.append(block); data[data.count - 1] = UInt8(i) }
        try w.remote("docs/big.bin", body)
        var slow = Fault(); slow.bytesPerSecond = 1 << 20
        w.origin.setFault(slow, for: "/docs/big.bin")
        try w.placeholder("docs/big.bin", size: body.count)
        let docs = w.documents { $0.idleTimeout = .seconds(1); $0.maxRetriggers = 1 }
        let read = try await docs.readInPlaceBytes("docs/big.bin")
        let whole = read == body   // a Bool: a failing #expect on 6 MiB values would diff them for minutes
        #expect(whole, "\(read.count) of \(body.count) bytes")
        #expect(w.origin.requests.filter { $0.method == "GET" }.count == 1)   // never re-triggered
    }

    /// Bytes counted from the engine's progress, not the partial file's length (which grows
    /// a whole 1 MiB buffer at a time): at 384 KiB/s the file stands still for over 2 s.
    @Test func progressIsTheBytesReceivedNotThePartialFilesLength() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        let body = Data((0..<(3 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try w.remote("docs/slow.bin", body)
        var slow = Fault(); slow.bytesPerSecond = 384 << 10
        w.origin.setFault(slow, for: "/docs/slow.bin")
        try w.placeholder("docs/slow.bin", size: body.count)
        let docs = w.documents { $0.idleTimeout = .seconds(1); $0.maxRetriggers = 0 }
        let read = try await docs.readInPlaceBytes("docs/slow.bin")
        let whole = read == body   // a Bool: a failing #expect on large values would diff them for minutes
        #expect(whole, "\(read.count) of \(body.count) bytes")
        #expect(w.origin.requests.filter { $0.method == "GET" }.count == 1)
    }
}
