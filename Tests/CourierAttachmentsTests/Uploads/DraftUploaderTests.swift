import Courier
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierAttachments
@testable import CourierCore

/// Issue 48: Courier's uploader of the IETF resumable upload draft against SwiftNIO's own
/// server (``DraftUploadServer``), for interop versions 3, 5 and 6: the whole file, a run
/// stopped after its first append and a new one that asks the offset and sends only the
/// rest, an upload the server lost, and a server that does not speak the draft. Not over
/// FoundationNetworking: it takes the server's `104` for the creation's reply
/// (``DraftInteropTests``).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["COURIER_TEST_TRANSPORT"] != "urlsession",
                             "FoundationNetworking takes a 104 for the reply"))
struct DraftUploaderTests {
    static let size = 700_000
    static let chunk: Int64 = 256 << 10

    func file(_ dir: URL) throws -> (URL, Data) {
        var data = Data(count: Self.size)
        for i in data.indices { data[i] = UInt8(truncatingIfNeeded: i &* 131 &+ i >> 11) }
        let url = dir.appendingPathComponent("clip.bin")
        try data.write(to: url)
        return (url, data)
    }

    @Test(arguments: ResumableUploadDraft.Version.allCases)
    func aRunStoppedAfterItsFirstAppendIsFinishedByTheNextFromTheServersOffset(_ version: ResumableUploadDraft.Version) async throws {
        let dir = temporaryFolder("courier-draft-up")
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try await DraftUploadServer.start(directory: dir.appendingPathComponent("served"))
        let (source, data) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let journal = UploadJournal(database: database, id: "put:clip")
        let target = server.url("/files/v\(version.rawValue)/clip.bin")

        // The first run's second append never leaves: as when the process is killed.
        let stopping = StopAtSecondAppend(inner: testTransport())
        let first = try DraftUploader(target: target, version: version, chunkSize: Self.chunk, transport: stopping)
        await #expect(throws: Stopped.self) { try await first.upload(source, journal: journal) }
        let kept = try #require(try await database.upload(id: "put:clip")?.record)
        #expect(kept.kind == .ietf && kept.confirmedBytes == Self.chunk && kept.remoteId?.contains("/resumable_upload/") == true, "\(kept)")
        try await first.shutdown()

        let second = try DraftUploader(target: target, version: version, chunkSize: Self.chunk, transport: testTransport())
        let location = try await second.upload(source, journal: journal)
        #expect(location.absoluteString == kept.remoteId)
        #expect(try Data(contentsOf: dir.appendingPathComponent("served/files/v\(version.rawValue)/clip.bin")) == data)
        #expect(try await database.upload(id: "put:clip") == nil)
        let log = server.requests
        #expect(log.map(\.method) == ["POST", "PATCH", "HEAD", "PATCH", "PATCH"], "\(log)")
        #expect(log.map(\.offset) == [nil, 0, nil, Self.chunk, 2 * Self.chunk])
        #expect(log.map(\.bodyBytes).reduce(0, +) == Int64(Self.size), "every byte once")
        try await second.shutdown()
        try await server.stop()
    }

    /// A recorded upload the server no longer knows (404 to the offset request) is created
    /// again, once, and the file goes up whole.
    @Test func anUploadTheServerLostIsCreatedAgain() async throws {
        let dir = temporaryFolder("courier-draft-lost")
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try await DraftUploadServer.start(directory: dir.appendingPathComponent("served"))
        let (source, data) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let target = server.url("/files/lost.bin")
        let file = try UploadSource(url: source)
        try await database.beginUpload(UploadRecord(id: "put:lost", sourcePath: source.path, sourceSize: file.size, sourceModified: file.modified,
                                                    kind: .ietf, target: target.absoluteString, partSize: Self.chunk))
        try await database.noteUploadHandle(id: "put:lost", remoteId: server.url("/resumable_upload/forgotten").absoluteString)
        let uploader = try DraftUploader(target: target, chunkSize: Self.chunk, transport: testTransport())
        let location = try await uploader.upload(source, journal: UploadJournal(database: database, id: "put:lost"))
        #expect(location.path.hasPrefix("/resumable_upload/") && location.lastPathComponent != "forgotten")
        #expect(try Data(contentsOf: dir.appendingPathComponent("served/files/lost.bin")) == data)
        #expect(server.requests.map(\.method) == ["HEAD", "POST", "PATCH", "PATCH", "PATCH"], "\(server.requests)")
        try await uploader.shutdown()
        try await server.stop()
    }

    /// A server without the draft (the bundled origin) is told apart at the creation, before
    /// any byte of the file goes: `E_PROTOCOL` in words, and ``DraftUploader/NotSpoken`` for a
    /// caller with a fallback.
    @Test func aServerWithoutTheDraftIsToldApartBeforeAnyByteGoes() async throws {
        let dir = temporaryFolder("courier-draft-plain")
        defer { try? FileManager.default.removeItem(at: dir) }
        let origin = try await CourierOrigin.start(directory: dir, writable: true)
        let (source, _) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let uploader = try DraftUploader(target: URL(string: "http://127.0.0.1:\(origin.port)/up/clip.bin")!, transport: testTransport())
        let error = await #expect(throws: CourierError.self) { try await uploader.upload(source, journal: UploadJournal(database: database, id: "put:plain")) }
        #expect(error?.code == .protocolViolation && error?.message.contains("does not speak the resumable upload draft") == true, "\(String(describing: error))")
        await #expect(throws: DraftUploader.NotSpoken.self) { try await uploader.uploadOrSayNotSpoken(source, journal: UploadJournal(database: database, id: "put:plain")) }
        #expect(origin.requests.allSatisfy { $0.method == "POST" }, "\(origin.requests.map(\.method))")
        try await uploader.shutdown()
        try await origin.stop()
    }
}

struct Stopped: Error {}

/// Lets requests through until the second `PATCH`, which it refuses before sending.
final class StopAtSecondAppend: HTTPTransport, @unchecked Sendable {   // `patches` under its lock
    let inner: any HTTPTransport
    let lock = NSLock()
    var patches = 0
    init(inner: (any HTTPTransport)?) { self.inner = inner ?? AsyncHTTPClientTransport() }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.method == .patch, lock.withLock({ patches += 1; return patches }) >= 2 { throw Stopped() }
        return try await inner.send(request)
    }
    func shutdown() async throws { try await inner.shutdown() }
}
