import Courier
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierAttachments
@testable import CourierCore

/// Issue 48: an upload the system carries (URLSession's own resumable upload on Apple
/// platforms, iOS 17 on), with Courier's record on top, against SwiftNIO's draft server.
/// Linux has no such system: ``DraftSpeakingSystem`` stands in for it, speaking the draft
/// as the system does (a creation the server names, the file from the server's offset in
/// one append marked complete, a blob to go on from when cut or stopped). What is tested is
/// what Courier does around it: the record, the blob, net progress, and Courier's own offset
/// request when no blob is left (a kill).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] != "urlsession",
                             "FoundationNetworking takes a 104 for the reply"))
struct SystemDraftUploadTests {
    static let size = 700_000

    struct World {
        let dir: URL, server: DraftUploadServer, source: URL, data: Data, database: CourierDatabase, journal: UploadJournal
        func uploader(_ system: DraftSpeakingSystem?, maxAttempts: Int = 6) throws -> DraftUploader {
            try DraftUploader(target: server.url("/files/sys.bin"), version: .v6, chunkSize: 256 << 10, maxAttempts: maxAttempts,
                              transport: testTransport(), system: system)
        }
        var stored: Data? { try? Data(contentsOf: dir.appendingPathComponent("served/files/sys.bin")) }   // nil: the server holds no file
        func end() async throws { try await server.stop(); try? FileManager.default.removeItem(at: dir) }   // best effort: a temporary folder
    }

    static func world(_ name: String) async throws -> World {
        let dir = temporaryFolder("courier-sys-\(name)")
        let server = try await DraftUploadServer.start(directory: dir.appendingPathComponent("served"))
        var data = Data(count: size)
        for i in data.indices { data[i] = UInt8(truncatingIfNeeded: i &* 131 &+ i >> 11) }
        let source = dir.appendingPathComponent("clip.bin")
        try data.write(to: source)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        return World(dir: dir, server: server, source: source, data: data, database: database, journal: UploadJournal(database: database, id: "put:sys"))
    }

    @Test func theSystemCarriesTheWholeUpload() async throws {
        let w = try await Self.world("whole")
        let system = try DraftSpeakingSystem(w.server)
        let location = try await w.uploader(system).upload(w.source, journal: w.journal)
        #expect(location.path.hasPrefix("/resumable_upload/"))
        #expect(w.stored == w.data)
        #expect(try await w.database.upload(id: "put:sys") == nil, "the record goes with the upload")
        #expect(system.given == [nil])
        #expect(w.server.requests.map(\.method) == ["POST", "PATCH"], "\(w.server.requests)")
        try await w.end()
    }

    /// Cut at 300,000 bytes with a blob: Courier keeps the blob, reads the server's offset
    /// (net progress), and the system goes on from the blob with only the rest.
    @Test func aCutUploadGoesOnFromTheSystemsBlob() async throws {
        let w = try await Self.world("blob")
        let system = try DraftSpeakingSystem(w.server, cuts: [300_000])
        _ = try await w.uploader(system).upload(w.source, journal: w.journal)
        #expect(w.stored == w.data)
        #expect(system.given.count == 2 && system.given[0] == nil && system.given[1] != nil, "the second try goes on from the blob")
        let log = w.server.requests
        #expect(log.filter { $0.method == "PATCH" }.map(\.offset) == [0, 300_000], "\(log)")
        #expect(log.map(\.bodyBytes).reduce(0, +) == Int64(Self.size), "every byte once")
        try await w.end()
    }

    /// Cut with no blob (the system gave none): the upload the server named goes on over
    /// Courier's own offset request and appends.
    @Test func aCutWithoutABlobGoesOnOverCouriersOwnRequests() async throws {
        let w = try await Self.world("noblob")
        let system = try DraftSpeakingSystem(w.server, cuts: [300_000], givesBlob: false)
        _ = try await w.uploader(system).upload(w.source, journal: w.journal)
        #expect(w.stored == w.data)
        #expect(system.given == [nil])
        let log = w.server.requests
        #expect(log.map(\.method) == ["POST", "PATCH", "HEAD", "HEAD", "PATCH", "PATCH"], "\(log)")
        #expect(log.filter { $0.method == "PATCH" }.map(\.offset) == [0, 300_000, 300_000 + (256 << 10)])
        #expect(log.map(\.bodyBytes).reduce(0, +) == Int64(Self.size), "every byte once")
        try await w.end()
    }

    /// A stop keeps the record and the blob; the next run (a relaunch) goes on from the blob.
    /// Had the process been killed before the blob was written, the next run goes on with
    /// Courier's own offset request: only the rest, either way.
    @Test(arguments: [true, false])
    func aStoppedUploadGoesOnInTheNextRun(_ blobKept: Bool) async throws {
        let w = try await Self.world("stop-\(blobKept)")
        let stopping = try DraftSpeakingSystem(w.server, cuts: [300_000], holdsAfterCut: true)
        let first = Task { try await w.uploader(stopping).upload(w.source, journal: w.journal) }
        await stopping.held.wait()
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        let kept = try #require(try await w.database.upload(id: "put:sys")?.record)
        #expect(kept.remoteId?.contains("/resumable_upload/") == true && kept.systemResumeData != nil, "\(kept)")
        if !blobKept { try await w.database.noteUploadResumeData(id: "put:sys", nil) }   // killed before the blob was written
        let before = w.server.requests.count

        let next = try DraftSpeakingSystem(w.server)
        let location = try await w.uploader(next).upload(w.source, journal: w.journal)
        #expect(location.absoluteString == kept.remoteId)
        #expect(w.stored == w.data)
        #expect(next.given == (blobKept ? [kept.systemResumeData] : []))
        let rerun = w.server.requests.dropFirst(before)
        #expect(rerun.first?.method == "HEAD" && rerun.first { $0.method == "PATCH" }?.offset == 300_000, "\(rerun)")
        #expect(w.server.requests.map(\.bodyBytes).reduce(0, +) == Int64(Self.size), "every byte once")
        try await w.end()
    }

    /// A blob for an upload the server no longer has: a new upload, once, and the file whole.
    @Test func aBlobForALostUploadStartsAgain() async throws {
        let w = try await Self.world("lost")
        let file = try UploadSource(url: w.source)
        try await w.database.beginUpload(UploadRecord(id: "put:sys", sourcePath: w.source.path, sourceSize: file.size, sourceModified: file.modified,
                                                      kind: .ietf, target: w.server.url("/files/sys.bin").absoluteString, partSize: 256 << 10))
        try await w.database.noteUploadResumeData(id: "put:sys", Data(w.server.url("/resumable_upload/forgotten").absoluteString.utf8))
        let system = try DraftSpeakingSystem(w.server)
        _ = try await w.uploader(system).upload(w.source, journal: w.journal)
        #expect(w.stored == w.data)
        #expect(system.given.count == 2 && system.given[1] == nil)
        try await w.end()
    }

    /// A cut that repeats forever at the same byte: `maxAttempts` tries without net progress
    /// (by the server's offset), then `E_NETWORK`.
    @Test func aCutThatRepeatsForeverGivesUp() async throws {
        let w = try await Self.world("forever")
        let system = try DraftSpeakingSystem(w.server, cuts: Array(repeating: 300_000, count: 50))
        let error = await #expect(throws: CourierError.self) { try await w.uploader(system, maxAttempts: 3).upload(w.source, journal: w.journal) }
        #expect(error?.code == .network, "\(String(describing: error))")
        #expect(system.given.count == 3, "\(system.given.count) tries")
        try await w.end()
    }

    /// The system spoke a version Courier's requests do not (a newer OS): the upload's URL is
    /// not recorded, and a cut without a blob sends the file again through the system, not
    /// Courier's offset request in the wrong version.
    @Test func anUploadInAVersionCourierDoesNotSpeakGoesOnOnlyThroughTheSystem() async throws {
        let w = try await Self.world("v8")
        let system = try DraftSpeakingSystem(w.server, cuts: [300_000], givesBlob: false, speaks: 8)
        let first = Task { try await w.uploader(system).upload(w.source, journal: w.journal) }
        _ = try await first.value
        #expect(w.stored == w.data)
        #expect(system.given == [nil, nil], "sent again through the system")
        #expect(!w.server.requests.contains { $0.method == "HEAD" }, "no request of Courier's own: \(w.server.requests)")
        try await w.end()
    }

    /// A blob the server refuses (401: it may carry an expired token) is dropped, and
    /// Courier's own requests go on from the server's offset; a cut no retry mends (TLS) is
    /// an error at once.
    @Test func aRefusedBlobGoesOnOverCouriersRequestsAndATLSFailureStops() async throws {
        let w = try await Self.world("refusedblob")
        let system = try DraftSpeakingSystem(w.server, cuts: [300_000], blobRefusedWith: 401)
        _ = try await w.uploader(system).upload(w.source, journal: w.journal)
        #expect(w.stored == w.data)
        #expect(system.given.count == 2 && system.given[1] != nil)
        #expect(w.server.requests.filter { $0.method == "PATCH" }.map(\.offset).prefix(2) == [0, 300_000], "\(w.server.requests)")
        try await w.end()

        let t = try await Self.world("tls")
        let failing = try DraftSpeakingSystem(t.server, cuts: [300_000], cutWith: .tls)
        let error = await #expect(throws: CourierError.self) { try await t.uploader(failing).upload(t.source, journal: t.journal) }
        #expect(error?.code == .tls && failing.given.count == 1)
        try await t.end()
    }

    /// A final refusal is an error with its code, not a retry.
    @Test func aRefusalIsAnErrorWithItsCode() async throws {
        let w = try await Self.world("refused")
        let system = try DraftSpeakingSystem(w.server, finalStatus: 403)
        let error = await #expect(throws: CourierError.self) { try await w.uploader(system).upload(w.source, journal: w.journal) }
        #expect(error?.code == .accessDenied && error?.httpStatus == 403, "\(String(describing: error))")
        #expect(system.given.count == 1)
        try await w.end()
    }
}

/// A stand-in for URLSession's own resumable upload (none on Linux), speaking the draft to a
/// real server as the system does, with Courier's request code: a creation the server
/// names (reported as the `104`'s `Location` would be), then the file from the server's
/// offset in one append marked complete. `cuts`: where each try stops, in order (the append
/// then ends short, not marked complete); `givesBlob`: whether a cut or a stop gives a blob
/// (the upload's URL); `holdsAfterCut`: the first cut waits for the caller to stop it.
final class DraftSpeakingSystem: SystemResumableUploading, @unchecked Sendable { // state under `lock`
    let interopVersion = 6
    private let requests: DraftUploader
    private let journal: UploadJournal
    private let lock = NSLock()
    private var cuts: [Int64]
    private let givesBlob: Bool, holdsAfterCut: Bool, finalStatus: Int, speaks: Int, cutWith: CourierError.Code, blobRefusedWith: Int?
    private var blobsGiven: [Data?] = []
    /// Opens once a cut holds (`holdsAfterCut`).
    let held = Gate()

    /// `speaks`: the interop version its `104` names; `cutWith`: the code of a cut;
    /// `blobRefusedWith`: the status a try from a blob gets.
    init(_ server: DraftUploadServer, cuts: [Int64] = [], givesBlob: Bool = true, holdsAfterCut: Bool = false, finalStatus: Int = 201,
         speaks: Int = 6, cutWith: CourierError.Code = .network, blobRefusedWith: Int? = nil) throws {
        self.speaks = speaks
        self.cutWith = cutWith
        self.blobRefusedWith = blobRefusedWith
        requests = try DraftUploader(target: server.url("/files/sys.bin"), version: .v6, transport: testTransport())
        journal = UploadJournal(database: try CourierDatabase.inMemory(), id: "system")
        self.cuts = cuts
        self.givesBlob = givesBlob
        self.holdsAfterCut = holdsAfterCut
        self.finalStatus = finalStatus
    }

    /// The blob each try was given, in order (`nil`: a new upload).
    var given: [Data?] { lock.withLock { blobsGiven } }

    func upload(_ file: URL, to url: URL, headers: [(name: String, value: String)], resumeData: Data?,
                events: @escaping @Sendable (SystemUploadEvent) -> Void) async -> SystemUploadOutcome {
        let cut: Int64? = lock.withLock { blobsGiven.append(resumeData); return cuts.isEmpty ? nil : cuts.removeFirst() }
        var location: URL?
        do {
            let source = try UploadSource(url: file)
            var offset: Int64 = 0
            if resumeData != nil, let refused = blobRefusedWith { return .finished(status: refused) }
            if let resumeData, let resumed = URL(string: String(decoding: resumeData, as: UTF8.self)) {
                guard let held = try await requests.serverOffset(resumed, size: source.size) else { return .finished(status: 404) }
                location = resumed
                offset = held.offset
            } else {
                location = try await requests.create()
                events(.location(location!, interopVersion: speaks))
            }
            let blob = givesBlob ? location.map { Data($0.absoluteString.utf8) } : nil
            let end = min(cut ?? source.size, source.size)
            if end > offset {
                let chunk = try source.read(offset: offset, length: end - offset)
                _ = try await requests.append(location!, chunk, last: end == source.size, tally: RequestTally(UploadCounter(journal: journal, total: source.size, held: 0)))
                events(.sent(end))
            }
            guard end == source.size else {
                if holdsAfterCut {
                    held.open()
                    let stopped = Gate()   // held until the caller stops it
                    await withTaskCancellationHandler { await stopped.wait() } onCancel: { stopped.open() }
                    return .interrupted(CourierError(.cancelled, "stopped"), resumeData: blob)
                }
                return .interrupted(CourierError(cutWith, "the connection was cut at \(end)"), resumeData: blob)
            }
            return .finished(status: finalStatus)
        } catch {
            return .interrupted(CourierError(.network, "\(error)"), resumeData: nil)
        }
    }
}

/// Opens once; every waiter returns then.
final class Gate: @unchecked Sendable { // under `lock`
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func open() { for waiter in lock.withLock({ isOpen = true; defer { waiters = [] }; return waiters }) { waiter.resume() } }
    func wait() async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { isOpen ? true : { waiters.append(continuation); return false }() }
            if now { continuation.resume() }
        }
    }
}
