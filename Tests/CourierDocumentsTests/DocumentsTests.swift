import CourierTestSupport
import Courier
import CourierAttachments
import CourierOrigin
import Foundation
import Testing
@testable import CourierDocuments

/// A mirrored folder over the live origin (HTTP remote, writable) or a local remote.
final class DocWorld: @unchecked Sendable { // one test at a time
    let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-doc-\(UUID().uuidString)")
    var remoteDir: URL { base.appendingPathComponent("remote") }
    var local: URL { base.appendingPathComponent("local") }
    var origin: CourierOrigin!
    var container: MirrorContainer!

    static func http(options: (inout DownloaderConfiguration) -> Void = { _ in }) async throws -> DocWorld {
        let w = DocWorld()
        try FileManager.default.createDirectory(at: w.remoteDir.appendingPathComponent("docs"), withIntermediateDirectories: true)
        w.origin = try await CourierOrigin.start(directory: w.remoteDir, writable: true)
        let storage = try HTTPRemoteStorage(baseURL: w.origin.url("/"), transport: testTransport())
        w.container = try MirrorContainer(root: w.local, storage: storage, database: try CourierDatabase(path: w.base.appendingPathComponent("c.sqlite").path), configure: options, transport: testTransport())
        return w
    }

    static func folder() throws -> DocWorld {
        let w = DocWorld()
        let storage = try LocalRemoteStorage(directory: w.remoteDir)
        w.container = try MirrorContainer(root: w.local, storage: storage, database: try CourierDatabase(path: w.base.appendingPathComponent("c.sqlite").path), transport: testTransport())
        return w
    }

    func remote(_ key: String, _ data: Data) throws {
        let url = remoteDir.appendingPathComponent(key)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
    }

    func placeholder(_ key: String, size: Int) throws {
        try Placeholder(key: key, size: Int64(size)).write(for: local.appendingPathComponent(key))
    }

    func close() async {
        await container?.shutdown()
        try? await origin?.stop()
        try? FileManager.default.removeItem(at: base)
    }

    func documents(_ change: (inout DocumentsOptions) -> Void = { _ in }) -> Documents {
        var o = DocumentsOptions()
        o.pollInterval = .milliseconds(10)
        o.idleTimeout = .seconds(5)
        change(&o)
        return Documents(container: container, options: o)
    }
}

func code(of body: () async throws -> Void) async -> String? { await errorCode(body) }

@Suite(.serialized) struct DocumentsTests {
    @Test func readingAPlaceholderDownloadsThenReads() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        let text = String(repeating: "héllo wörld\n", count: 50_000)
        try w.remote("docs/a.txt", Data(text.utf8))
        try w.placeholder("docs/a.txt", size: text.utf8.count)
        let docs = w.documents()
        #expect(docs.documentExists("docs/a.txt"))   // a placeholder counts
        #expect(try await docs.readInPlace("docs/a.txt") == text)
        #expect(!FileManager.default.fileExists(atPath: Placeholder.url(for: w.local.appendingPathComponent("docs/a.txt")).path))
        let gets = w.origin.requests.filter { $0.method == "GET" }.count
        let heads = w.origin.requests.filter { $0.method == "HEAD" }.count
        // A present, unchanged file reads with one HEAD (has the remote changed?) and no GET.
        #expect(try await docs.readInPlaceBytes("docs/a.txt") == Data(text.utf8))
        #expect(w.origin.requests.filter { $0.method == "GET" }.count == gets)
        let row = try await w.container.sync.row("docs/a.txt")
        #expect(w.origin.requests.filter { $0.method == "HEAD" }.count == heads + 1,
                "row: \(String(describing: row)); requests: \(w.origin.requests.map { "\($0.method) \($0.path) \($0.status)" })")
    }

    @Test func missingPathIsFileNotFoundOnOpen() async throws {
        let w = try DocWorld.folder()
        defer { Task { await w.close() } }
        let docs = w.documents()
        #expect(!docs.documentExists("nope.txt"))
        #expect(await code { _ = try await docs.readInPlace("nope.txt") } == "E_FNF")
        #expect(await code { _ = try await docs.readInPlaceBytes("dir/nope.bin") } == "E_FNF")
    }

    @Test func remoteNotFoundDuringTheReadIsFNFRead() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.placeholder("docs/gone.txt", size: 100)   // the remote never had it (deleted since listing)
        #expect(await code { _ = try await w.documents().readInPlace("docs/gone.txt") } == "E_FNF_READ")
        let f = try DocWorld.folder()
        defer { Task { await f.close() } }
        try f.placeholder("gone.bin", size: 10)
        #expect(await code { _ = try await f.documents().readInPlaceBytes("gone.bin") } == "E_FNF_READ")
    }

    /// The transfer starts, the connection drops, and by the resume the remote file is gone.
    /// (The resume waits on the engine's clock until the file is gone: on the wall clock's
    /// backoff, a starved test deleted it after the resume had fetched it whole.)
    @Test func remoteNotFoundMidwayIsFNFRead() async throws {
        let clock = ManualEngineClock()
        let w = try await DocWorld.http { $0.clock = clock }
        defer { Task { await w.close() } }
        try w.remote("docs/v.bin", Data(count: 1 << 20))
        var drop = Fault(); drop.dropAfterBytes = 128 << 10; drop.times = 1
        w.origin.setFault(drop, for: "/docs/v.bin")
        try w.placeholder("docs/v.bin", size: 1 << 20)
        let read = Task { await code { _ = try await w.documents().readInPlaceBytes("docs/v.bin") } }
        let backoff = try await clock.nextWait(.backoff)   // dropped; the resume waits
        try FileManager.default.removeItem(at: w.remoteDir.appendingPathComponent("docs/v.bin"))
        clock.advance(to: backoff)
        #expect(await read.value == "E_FNF_READ")
        #expect(w.origin.requests.contains { $0.method == "GET" && $0.status == 404 })
    }

    @Test func writeIntoAMissingFolderIsFNFWrite() async throws {
        let w = try DocWorld.folder()
        defer { Task { await w.close() } }
        #expect(await code { try await w.documents().writeInPlace("no/such/dir/x.txt", data: Data("x".utf8)) } == "E_FNF_WRITE")
        // And a write into an existing folder lands locally and is uploaded.
        try FileManager.default.createDirectory(at: w.local.appendingPathComponent("notes"), withIntermediateDirectories: true)
        try await w.documents().writeInPlace("notes/n.txt", data: Data("note".utf8))
        await w.container.flushUploads()
        #expect(try Data(contentsOf: w.remoteDir.appendingPathComponent("notes/n.txt")) == Data("note".utf8))
    }

    @Test func stalledTransferTimesOutAfterTheConfiguredRetriggers() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/big.bin", Data(count: 2 << 20))
        var stall = Fault(); stall.stallAfterBytes = 64 << 10
        w.origin.setFault(stall, for: "/docs/big.bin")
        try w.placeholder("docs/big.bin", size: 2 << 20)
        let docs = w.documents { $0.idleTimeout = .milliseconds(400); $0.maxRetriggers = 2 }
        let started = ContinuousClock.now
        #expect(await code { _ = try await docs.readInPlaceBytes("docs/big.bin") } == "E_TIMEOUT")
        #expect(ContinuousClock.now - started >= .milliseconds(1100))   // three idle windows: the first trigger and two more
        #expect(w.origin.requests.filter { $0.method == "GET" }.count >= 2)   // re-triggered, not just waited
    }

    @Test func invalidUTF8IsAnErrorNotALossyString() async throws {
        let w = try DocWorld.folder()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.local, withIntermediateDirectories: true)
        try Data([0x66, 0x6F, 0xFF, 0xFE, 0x6F]).write(to: w.local.appendingPathComponent("bad.txt"))
        #expect(await code { _ = try await w.documents().readInPlace("bad.txt") } == "E_ENCODING")
        #expect(try await w.documents().readInPlaceBytes("bad.txt") == Data([0x66, 0x6F, 0xFF, 0xFE, 0x6F]))
    }

    @Test func progressEndsOnCompletionAndOnFailure() async throws {
        let w = try await DocWorld.http()
        defer { Task { await w.close() } }
        try w.remote("docs/p.bin", Data(count: 3 << 20))
        // Stalled half way until the stream has shown a value between (a body left to flow
        // could end before the subscription, which then saw only the end).
        var slow = Fault(); slow.bytesPerSecond = 4 << 20; slow.stallAfterBytes = 3 << 19
        w.origin.setFault(slow, for: "/docs/p.bin")
        try w.placeholder("docs/p.bin", size: 3 << 20)
        let docs = w.documents()
        try await w.container.startDownloading("docs/p.bin", restart: false)
        var seen: [Double] = []
        for try await percent in docs.downloadProgress("docs/p.bin") {
            seen.append(percent)
            if percent > 0 && percent < 100 { w.origin.endStalls() }
        }
        #expect(seen.last == 100)
        #expect(seen.contains { $0 > 0 && $0 < 100 }, "\(seen)")   // values between, not only the end

        try w.placeholder("docs/missing.bin", size: 10)
        try await w.container.startDownloading("docs/missing.bin", restart: false)
        var failure: String?
        do { for try await _ in docs.downloadProgress("docs/missing.bin") {} } catch let e as CourierError { failure = e.code.rawValue }
        #expect(failure == "E_FNF_READ")

        // Unknown status: the stream stays open, looking again and again (it is cut here by
        // cancellation after its third look, not ended by it).
        let (looks, looked) = AsyncStream<Void>.makeStream()
        let unknownDocs = Documents(container: UnknownContainer(looked), options: docs.options)
        let unknown = Task { () -> Bool in
            for try await _ in unknownDocs.downloadProgress("never/heard/of.bin") { return false }
            return true
        }
        var count = 0
        for await _ in looks { count += 1; if count == 3 { break } }
        unknown.cancel()
        #expect(try await unknown.value == true)
    }

    @Test func concurrentWriterAndReaderNeverSeeATornFile() async throws {
        let w = try DocWorld.folder()
        defer { Task { await w.close() } }
        try FileManager.default.createDirectory(at: w.local, withIntermediateDirectories: true)
        let docs = w.documents()
        let a = Data(repeating: UInt8(ascii: "a"), count: 1 << 20), b = Data(repeating: UInt8(ascii: "b"), count: 1 << 20)
        try await docs.writeInPlace("shared.bin", data: a)
        let writer = Task {
            for i in 0..<40 { try await docs.writeInPlace("shared.bin", data: i % 2 == 0 ? b : a) }
        }
        var reads = 0
        while !writer.isCancelled, reads < 60 {
            let data = try await docs.readInPlaceBytes("shared.bin")
            #expect(data == a || data == b, "a torn read of \(data.count) bytes")
            reads += 1
        }
        try await writer.value
        await w.container.flushUploads()
        #expect(reads == 60)
    }

    @Test func placeholdersFromTheRemoteListingAndEvict() async throws {
        let w = try DocWorld.folder()
        defer { Task { await w.close() } }
        try w.remote("a.txt", Data("A".utf8))
        try w.remote("sub/b.txt", Data("BB".utf8))
        let created = try await w.container.createPlaceholders()
        #expect(created.sorted() == ["a.txt", "sub/b.txt"])
        let docs = w.documents()
        #expect(docs.documentExists("sub/b.txt"))
        #expect(!FileManager.default.fileExists(atPath: w.local.appendingPathComponent("sub/b.txt").path))
        #expect(try await docs.readInPlace("sub/b.txt") == "BB")
        try await w.container.evict("sub/b.txt")
        #expect(!FileManager.default.fileExists(atPath: w.local.appendingPathComponent("sub/b.txt").path))
        #expect(docs.documentExists("sub/b.txt"))
        #expect(await w.container.state(of: "sub/b.txt").status == .notDownloaded)
        #expect(try await docs.readInPlace("sub/b.txt") == "BB")   // downloads again
    }
}

/// A container that knows no file's status, and tells each look at one.
final class UnknownContainer: DocumentContainer {
    let root = URL(fileURLWithPath: "/nonexistent")
    let looked: AsyncStream<Void>.Continuation
    init(_ looked: AsyncStream<Void>.Continuation) { self.looked = looked }
    func entryExists(_ path: String) -> Bool { false }
    func startDownloading(_ path: String, restart: Bool) async throws {}
    func state(of path: String) async -> DocumentState { looked.yield(); return DocumentState(status: nil) }
    func coordinatedRead(_ path: String) async throws -> Data { Data() }
    func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws {}
    func coordinatedWrite(_ path: String, data: Data) async throws {}
}
