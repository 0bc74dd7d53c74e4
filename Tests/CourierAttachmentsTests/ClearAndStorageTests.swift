import Courier
import CourierOrigin
import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// Issue 16: log-out (clearQueue), the local storage seam, and PowerSync's `Data`-based
/// remote storage.
@Suite(.serialized) struct ClearAndStorageTests {
    func engineRecords(_ device: Device) async throws -> Int {
        try await device.db.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM courierDownload") ?? 0 }
    }

    /// Log-out with a SYNCED attachment, a queued upload and a download half-way: every
    /// record, file, partial and engine download goes; nothing more is uploaded; the queue
    /// still works afterwards.
    @Test func clearQueueEmptiesTableFilesAndEngineAndStaysUsable() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let served = base.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served.appendingPathComponent("files"), withIntermediateDirectories: true)
        try pseudoRandom(4 << 20).write(to: served.appendingPathComponent("files/big.bin"))
        let origin = try await CourierOrigin.start(directory: served, writable: true)
        var slow = Fault(); slow.bytesPerSecond = 64 << 10   // about a minute for 4 MiB
        origin.setFault(slow, for: "/files/big.bin")
        let storage = try HTTPRemoteStorage(baseURL: origin.url("/files"), transport: testTransport())
        let device = try Device(base: base, name: "d", storage: storage)

        let synced = try await device.queue.saveFile(data: Data("synced".utf8), mediaType: nil, fileExtension: "txt")
        await device.queue.sync()
        #expect(try await device.state(synced.id) == .synced)
        try await device.queue.reconcile([WatchedAttachmentItem(id: synced.id, filename: synced.filename), WatchedAttachmentItem(id: "big", filename: "big.bin")])
        let pass = Task { await device.queue.sync() }
        let partial = device.dir.appendingPathComponent("big.bin.partial")
        #expect(try await waitFor { FileManager.default.fileExists(atPath: partial.path) })
        // Saved during the pass: queued for the next one, which clearQueue stops.
        let queued = try await device.queue.saveFile(data: Data("queued".utf8), mediaType: nil, fileExtension: "txt")
        #expect(try await device.state(queued.id) == .queuedUpload)
        #expect(try await engineRecords(device) == 1)

        try await device.queue.clearQueue()
        await pass.value
        #expect(try await device.queue.attachments().isEmpty)
        #expect(try await engineRecords(device) == 0)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: device.dir.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(try FileManager.default.contentsOfDirectory(atPath: device.dir.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: served.appendingPathComponent("files/\(queued.filename)").path))

        let again = try await device.queue.saveFile(data: Data("after".utf8), mediaType: nil, fileExtension: "txt")
        await device.queue.sync()
        #expect(try await device.state(again.id) == .synced)   // not archived by the watched set of before the log-out
        #expect(try Data(contentsOf: served.appendingPathComponent("files/\(again.filename)")) == Data("after".utf8))
        await device.queue.stopSync()
        try await storage.shutdown()
        try await origin.stop()
    }

    /// The seam: files kept XORed (a stand-in for encryption) round-trip through a remote,
    /// over the resumable engine (HTTP) and over a plain storage (a folder). The bytes on
    /// disk are never plain, and the queue never touches its `directory`.
    @Test(arguments: ["http", "folder"])
    func localStorageSeamRoundTripsEncryptedFiles(_ remoteKind: String) async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let served = base.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served.appendingPathComponent("files"), withIntermediateDirectories: true)
        let origin = try await CourierOrigin.start(directory: served, writable: true)
        let http = try HTTPRemoteStorage(baseURL: origin.url("/files"), transport: testTransport())
        let remote: any RemoteStorage = remoteKind == "http" ? http : try LocalRemoteStorage(directory: served.appendingPathComponent("files"))
        let phoneVault = try XORLocalStorage(base: base.appendingPathComponent("phone-vault"))
        let tabletVault = try XORLocalStorage(base: base.appendingPathComponent("tablet-vault"))
        let phone = try Device(base: base, name: "phone", storage: remote, localStorage: phoneVault)
        let tablet = try Device(base: base, name: "tablet", storage: remote, localStorage: tabletVault)
        let source = base.appendingPathComponent("source.bin")
        let body = pseudoRandom(3 << 20)
        try body.write(to: source)

        let saved = try await phone.queue.saveFile(from: source, mediaType: nil, fileExtension: "bin")
        let onPhone = try Data(contentsOf: phoneVault.directory.appendingPathComponent(saved.filename))
        #expect(onPhone != body && XORLocalStorage.xor(onPhone) == body)
        await phone.queue.sync()
        #expect(try await phone.state(saved.id) == .synced)
        #expect(try Data(contentsOf: served.appendingPathComponent("files/\(saved.filename)")) == body)   // the remote gets plain bytes

        try await tablet.queue.reconcile([WatchedAttachmentItem(id: saved.id, filename: saved.filename)])
        await tablet.queue.sync()
        let record = try #require(try await tablet.queue.attachment(id: saved.id))
        #expect(record.state == .synced && record.size == Int64(body.count))
        let onTablet = try Data(contentsOf: tabletVault.directory.appendingPathComponent(saved.filename))
        #expect(onTablet != body && XORLocalStorage.xor(onTablet) == body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tabletVault.stagingDirectory.path).isEmpty)   // taken in
        #expect(tabletVault.operations["take"] == 1 && phoneVault.operations["read"] == 1)
        #expect(tablet.queue.localURL(for: record) == nil)   // no plain file to hand out

        // Behind the storage's back: nothing. The queue's `directory` was never even made.
        #expect(!FileManager.default.fileExists(atPath: phone.dir.path) && !FileManager.default.fileExists(atPath: tablet.dir.path))

        try await tablet.queue.clearQueue()
        #expect(tabletVault.operations["removeAll"] == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tabletVault.directory.path).isEmpty)
        try await http.shutdown()
        try await origin.stop()
    }

    /// PowerSync's `Data`-based adapter, wrapped: a save → upload → download round trip.
    @Test func dataRemoteStorageRoundTrips() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let adapter = MemoryDataAdapter()
        let storage = DataRemoteStorage(wrapping: adapter)
        #expect(storage.maxInMemoryBytes == 256 << 20)
        let phone = try Device(base: base, name: "phone", storage: storage)
        let tablet = try Device(base: base, name: "tablet", storage: storage)
        let photo = pseudoRandom(100_000)
        let saved = try await phone.queue.saveFile(data: photo, mediaType: "image/jpeg", fileExtension: "jpg")
        await phone.queue.sync()
        #expect(try await phone.state(saved.id) == .synced)
        #expect(await adapter.files[saved.filename] == photo)
        try await tablet.queue.reconcile([WatchedAttachmentItem(id: saved.id, filename: saved.filename)])
        await tablet.queue.sync()
        #expect(try await tablet.state(saved.id) == .synced)
        #expect(try Data(contentsOf: tablet.dir.appendingPathComponent(saved.filename)) == photo)
        try await phone.queue.deleteFile(id: saved.id)
        await phone.queue.sync()
        #expect(await adapter.files.isEmpty)
    }

    /// A file over the limit is refused before it is read (and before the adapter is
    /// called); the adapter's own errors leave with a code.
    @Test func dataRemoteStorageRefusesLargeFilesAndMapsErrors() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let adapter = MemoryDataAdapter()
        let storage = DataRemoteStorage(wrapping: adapter, maxInMemoryBytes: 1000)
        let file = base.appendingPathComponent("f.bin")
        try pseudoRandom(1001).write(to: file)
        let big = Attachment(id: "b", filename: "b.bin", state: .queuedUpload, size: 1001)
        #expect(await errorCode { try await storage.upload(fileAt: file, attachment: big) } == "E_ATTACHMENT_TOO_LARGE")
        #expect(await errorCode { try await storage.download(big, to: base.appendingPathComponent("out.bin")) } == "E_ATTACHMENT_TOO_LARGE")
        #expect(await adapter.calls == 0)
        #expect(await errorCode { try await storage.upload(fileAt: base.appendingPathComponent("missing"), attachment: big) }?.hasPrefix("E_FNF") == true)

        let small = Attachment(id: "s", filename: "s.bin", state: .queuedUpload)
        try pseudoRandom(1000).write(to: file)
        try await storage.upload(fileAt: file, attachment: small)   // at the limit: fine
        try await storage.download(small, to: base.appendingPathComponent("out.bin"))
        #expect(try Data(contentsOf: base.appendingPathComponent("out.bin")) == pseudoRandom(1000))
        await adapter.setUnreachable(true)
        #expect(await errorCode { try await storage.upload(fileAt: file, attachment: small) } == "E_REMOTE_STORAGE")
        #expect(await errorCode { try await storage.delete(small) } == "E_REMOTE_STORAGE")
        #expect(await errorCode { try await storage.download(Attachment(id: "x", filename: "x", state: .queuedDownload), to: file) } == "E_REMOTE_STORAGE")
    }
}
