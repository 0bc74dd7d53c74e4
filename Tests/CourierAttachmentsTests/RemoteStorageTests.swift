import Courier
import CourierOrigin
import Crypto
import CourierTestSupport
import CourierAsyncHTTPClient
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

func s3Storage(bucket: String, partSize: Int64 = 5 << 20) -> S3RemoteStorage {
    var c = S3Configuration(bucket: bucket, prefix: "att/", endpoint: MotoServer.shared.endpoint!, accessKeyID: "testing", secretAccessKey: "testing")
    c.multipartThreshold = partSize
    c.partSize = partSize
    return S3RemoteStorage(configuration: c, transport: testTransport())
}

func pseudoRandom(_ count: Int, seed: UInt64 = 7) -> Data {
    var state = seed | 1
    var words = [UInt64](repeating: 0, count: count / 8 + 1)
    for i in words.indices { state ^= state << 13; state ^= state >> 7; state ^= state << 17; words[i] = state }
    return words.withUnsafeBytes { Data($0.prefix(count)) }
}

@Suite(.serialized) struct RemoteStorageTests {
    @Test func httpStorageUploadsDownloadsResumablyAndDeletesWithAuth() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let served = base.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        let origin = try await CourierOrigin.start(directory: served, writable: true)
        origin.requireAuthorization("Bearer s3cr3t")
        defer { Task { try? await origin.stop() } }
        let storage = try HTTPRemoteStorage(baseURL: origin.url("/files"), headers: [("Authorization", "Bearer s3cr3t")], transport: testTransport())
        let phone = try Device(base: base, name: "phone", storage: storage)
        let tablet = try Device(base: base, name: "tablet", storage: storage)

        let body = pseudoRandom(3 << 20)
        let saved = try await phone.queue.saveFile(data: body, mediaType: "application/octet-stream", fileExtension: "bin")
        await phone.queue.sync()
        #expect(try await phone.state(saved.id) == .synced)
        #expect(try Data(contentsOf: served.appendingPathComponent("files/\(saved.filename)")) == body)

        // The tablet's first download is cut mid-way; the next pass resumes it with Range.
        var drop = Fault(); drop.dropAfterBytes = 1 << 20; drop.times = 1
        origin.setFault(drop, for: "/files/\(saved.filename)")
        try await tablet.queue.reconcile([WatchedAttachmentItem(id: saved.id, filename: saved.filename)])
        await tablet.queue.sync()
        #expect(try await waitFor { try await tablet.state(saved.id) == .synced })
        #expect(try Data(contentsOf: tablet.dir.appendingPathComponent(saved.filename)) == body)
        let gets = origin.requests.filter { $0.method == "GET" }
        #expect(gets.count == 2 && gets.last?.status == 206 && gets.last?.range != nil)
        #expect(gets.allSatisfy { $0.authorization == "Bearer s3cr3t" })
        // The token never reached the database.
        let dbText = try await tablet.db.read { db in try String.fetchAll(db, sql: "SELECT remoteUrl FROM courierDownload") }.joined()
        #expect(!dbText.contains("s3cr3t"))

        try await phone.queue.deleteFile(id: saved.id)
        await phone.queue.sync()
        #expect(!FileManager.default.fileExists(atPath: served.appendingPathComponent("files/\(saved.filename)").path))
        #expect(try await phone.queue.attachment(id: saved.id) == nil)
        await phone.queue.stopSync(); await tablet.queue.stopSync()
    }

    @Test(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server (pip install 'moto[server]')"))
    func s3MultipartUploadAndPresignedDownload() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let storage = s3Storage(bucket: "courier-\(UUID().uuidString.prefix(8).lowercased())")
        try await storage.createBucketIfNeeded()
        let phone = try Device(base: base, name: "phone", storage: storage)
        let tablet = try Device(base: base, name: "tablet", storage: storage)

        let big = pseudoRandom(12 << 20 + 12345)
        #expect(storage.partCount(forSize: Int64(big.count)) == 3)   // larger than the part size: multipart
        let source = base.appendingPathComponent("big.bin")
        try big.write(to: source)
        let saved = try await phone.queue.saveFile(from: source, mediaType: "application/octet-stream", fileExtension: "bin")
        await phone.queue.sync()
        #expect(try await phone.state(saved.id) == .synced)
        #expect(try await storage.objectETag(for: saved)?.hasSuffix("-3\"") == true)   // three parts

        try await tablet.queue.reconcile([WatchedAttachmentItem(id: saved.id, filename: saved.filename)])
        await tablet.queue.sync()
        #expect(try await tablet.state(saved.id) == .synced)
        #expect(try Data(contentsOf: tablet.dir.appendingPathComponent(saved.filename)) == big)

        let small = try await phone.queue.saveFile(data: Data("tiny".utf8), mediaType: "text/plain", fileExtension: "txt")
        await phone.queue.sync()
        let check = base.appendingPathComponent("check.txt")
        try await storage.download(small, to: check)
        #expect(try Data(contentsOf: check) == Data("tiny".utf8))

        // The listing (which `courier doc placeholders` builds on) shows both, with sizes.
        let listed = try await storage.list()
        #expect(listed.map(\.key).sorted() == [saved.filename, small.filename].sorted())
        #expect(listed.first { $0.key == saved.filename }?.size == Int64(big.count))

        try await phone.queue.deleteFile(id: small.id)
        await phone.queue.sync()
        await #expect(throws: CourierError.self) { try await storage.download(small, to: check.appendingPathExtension("2")) }
        await phone.queue.stopSync(); await tablet.queue.stopSync()
    }

    /// A presigned S3 download interrupted mid-way resumes in a new engine (a relaunch),
    /// re-signing the link first, and is byte-identical.
    @Test(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server"))
    func s3DownloadResumesAfterInterruption() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let storage = s3Storage(bucket: "courier-\(UUID().uuidString.prefix(8).lowercased())", partSize: 64 << 20)
        try await storage.createBucketIfNeeded()
        let data = pseudoRandom(48 << 20, seed: 11)
        let file = base.appendingPathComponent("src.bin")
        try data.write(to: file)
        let attachment = Attachment(id: "v1", filename: "v1.bin", state: .queuedUpload)
        try await storage.upload(fileAt: file, attachment: attachment)

        let root = base.appendingPathComponent("root")
        let db = try CourierDatabase(path: base.appendingPathComponent("c.sqlite").path)
        var config = DownloaderConfiguration(rootDirectory: root)
        config.freeSpaceReserve = 0
        let recorder = StatusRecorder()
        let refresher = Presigner(storage: storage, attachment: attachment)
        let first = Downloader(configuration: config, database: db, transport: RecordingTransport(recorder: recorder), urlRefresher: refresher)
        try await first.enqueue(DownloadRequest(id: "v1", url: try await storage.downloadURL(for: attachment), destination: "v1.bin",
                                                sha256: SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()))
        _ = try await waitFor { PartialFile.length(at: root.appendingPathComponent("v1.bin.partial")) > 4 << 20 }
        await first.shutdown()
        let kept = PartialFile.length(at: root.appendingPathComponent("v1.bin.partial"))
        let second = Downloader(configuration: config, database: db, transport: RecordingTransport(recorder: recorder), urlRefresher: refresher)
        try await second.start()
        let record = try await second.waitForCompletion(id: "v1")
        await second.shutdown()
        #expect(record.state == .completed)
        #expect(try Data(contentsOf: root.appendingPathComponent("v1.bin")) == data)
        #expect(kept > 0 && kept < Int64(data.count))   // the first engine was stopped mid-way
        #expect(await recorder.statuses.last == 206)    // the second resumed with a range
        #expect(await refresher.calls >= 1)             // after re-signing the link
    }
}

actor StatusRecorder {
    var statuses: [Int] = []
    func add(_ s: Int) { statuses.append(s) }
}

struct RecordingTransport: HTTPTransport {
    let recorder: StatusRecorder
    let inner = AsyncHTTPClientTransport()
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await inner.send(request)
        await recorder.add(response.status)
        return response
    }
    func shutdown() async throws { try await inner.shutdown() }
}

actor Presigner: URLRefreshing {
    let storage: S3RemoteStorage
    let attachment: Attachment
    var calls = 0
    init(storage: S3RemoteStorage, attachment: Attachment) { self.storage = storage; self.attachment = attachment }
    func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String? {
        calls += 1
        return try await storage.downloadURL(for: attachment)
    }
}
