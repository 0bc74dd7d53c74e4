import Courier
import CourierOrigin
import CourierTestSupport
import Foundation
import HTTPTypes
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

extension DraftUploaderTests {
    /// An append that says the wrong offset gets 409 with the server's: the uploader goes on
    /// from the offset the 409 named, with no question on that connection. SwiftNIO's server
    /// then no longer knows the upload (404 to that append: it drops an upload after a 409),
    /// so a new one is made, once, and the file is right.
    @Test func aConflictsOffsetIsTakenAsSaid() async throws {
        let dir = temporaryFolder("courier-draft-409")
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try await DraftUploadServer.start(directory: dir.appendingPathComponent("served"))
        let (source, data) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let uploader = try DraftUploader(target: server.url("/files/409.bin"), chunkSize: Self.chunk, transport: MisstateSecondAppend(inner: testTransport()))
        let location = try await uploader.upload(source, journal: UploadJournal(database: database, id: "put:409"))
        #expect(location.path.hasPrefix("/resumable_upload/"))
        #expect(try Data(contentsOf: dir.appendingPathComponent("served/files/409.bin")) == data)
        let log = server.requests
        #expect(log.prefix(4).map(\.method) == ["POST", "PATCH", "PATCH", "PATCH"] && log.prefix(4).map(\.offset) == [nil, 0, Self.chunk + 1000, Self.chunk],
                "the 409's offset taken as said: \(log)")
        #expect(!log.contains { $0.method == "HEAD" })
        #expect(log.dropFirst(4).map(\.method) == ["POST", "PATCH", "PATCH", "PATCH"], "created again once: \(log)")
        try await uploader.shutdown()
        try await server.stop()
    }

    /// The last append arrived whole but its reply was lost, and the server keeps finished
    /// uploads (a scripted one: SwiftNIO's forgets them, 404): the offset request says it
    /// holds every byte, complete, and that is the end. An empty append marked complete
    /// would get 400.
    @Test func aLastAppendWhoseReplyWasLostEndsOnTheOffsetRequest() async throws {
        let dir = temporaryFolder("courier-draft-lostreply")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (source, _) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let script = KeepsFinishedUploads(size: Int64(Self.size))
        let uploader = try DraftUploader(target: URL(string: "http://uploads.example/f.bin")!, chunkSize: 1 << 20, transport: script)
        let location = try await uploader.upload(source, journal: UploadJournal(database: database, id: "put:lostreply"))
        #expect(location.absoluteString == "http://uploads.example/resumable/1")
        #expect(script.methods == ["POST", "PATCH", "HEAD"], "\(script.methods)")
        #expect(try await database.upload(id: "put:lostreply") == nil)
    }

    /// The budget counts failures in a row without net progress: a server whose every append
    /// is cut, but which keeps a little more each time, is followed to the end.
    @Test func appendsCutAfterALittleMoreEachTimeFinish() async throws {
        let dir = temporaryFolder("courier-draft-creep")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (source, _) = try file(dir)
        let database = try CourierDatabase(path: dir.appendingPathComponent("courier.sqlite").path)
        let script = KeepsFinishedUploads(size: Int64(Self.size), cutEveryAppendAfter: 100_000)
        let uploader = try DraftUploader(target: URL(string: "http://uploads.example/f.bin")!, chunkSize: 1 << 20, maxAttempts: 3, transport: script)
        _ = try await uploader.upload(source, journal: UploadJournal(database: database, id: "put:creep"))
        #expect(script.methods.filter { $0 == "PATCH" }.count == 7, "700,000 bytes, 100,000 kept per cut append: \(script.methods)")
    }
}

/// A scripted server of the draft that keeps finished uploads: it stores every append, but
/// the reply to the one marked complete is lost; with `cutEveryAppendAfter`, each append
/// keeps that many bytes and its reply is lost.
final class KeepsFinishedUploads: HTTPTransport, @unchecked Sendable {   // every field under `lock`
    let size: Int64, cut: Int64?
    let lock = NSLock()
    var held: Int64 = 0, complete = false, methods: [String] = []
    init(size: Int64, cutEveryAppendAfter cut: Int64? = nil) { self.size = size; self.cut = cut }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let fields = request.headerFields
        let offset = fields[HTTPField.Name("Upload-Offset")!].flatMap { Int64($0) }
        var length: Int64 = 0
        if request.method == .patch, let body = request.body { length = body.length }
        let (status, reply): (Int, [(String, String)]) = try lock.withLock {
            methods.append(request.method.rawValue)
            let version = [("Upload-Draft-Interop-Version", "6")]
            switch request.method {
            case .post: return (201, version + [("Location", "/resumable/1"), ("Upload-Offset", "0"), ("Upload-Complete", "?0")])
            case .head: return (204, version + [("Upload-Offset", "\(held)"), ("Upload-Complete", complete ? "?1" : "?0")])
            default:
                guard offset == held else { return (409, version + [("Upload-Offset", "\(held)")]) }
                held += min(length, cut ?? length)
                complete = fields[HTTPField.Name("Upload-Complete")!] == "?1" && held == size
                throw CourierError(.network, "the reply was lost (scripted)")
            }
        }
        var headerFields = HTTPFields()
        for (name, value) in reply { headerFields[HTTPField.Name(name)!] = value }
        return TransportResponse(status: status, headerFields: headerFields, body: TransportBody(bytes: Data()))
    }
    func shutdown() async throws {}
}

/// Sends the second append with an offset 1000 bytes past the true one.
final class MisstateSecondAppend: HTTPTransport, @unchecked Sendable {   // `patches` under its lock
    let inner: any HTTPTransport
    let lock = NSLock()
    var patches = 0
    init(inner: (any HTTPTransport)?) { self.inner = inner ?? AsyncHTTPClientTransport() }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var request = request
        if request.method == .patch, lock.withLock({ patches += 1; return patches }) == 2, let name = HTTPField.Name("Upload-Offset"),
           let offset = request.headerFields[name].flatMap({ Int64($0) }) {
            request.headerFields[name] = String(offset + 1000)
        }
        return try await inner.send(request)
    }
    func shutdown() async throws { try await inner.shutdown() }
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
