import CourierTestSupport
import Courier
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// Nothing but `CourierError` leaves the attachments target's public API: database
/// failures, dead servers and missing files each come out with a code.
@Suite struct ErrorBoundaryTests {
    @Test func deadServersAreCourierErrors() async throws {
        let port = closedLoopbackPort()
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let file = base.appendingPathComponent("f.bin")
        try Data("x".utf8).write(to: file)
        let attachment = Attachment(id: "a", filename: "a.bin", state: .queuedUpload)
        let http = try HTTPRemoteStorage(baseURL: "http://127.0.0.1:\(port)/files", transport: testTransport())
        var c = S3Configuration(bucket: "b", prefix: "p/", endpoint: URL(string: "http://127.0.0.1:\(port)")!, accessKeyID: "k", secretAccessKey: "s")
        c.multipartThreshold = 5 << 20
        let s3 = S3RemoteStorage(configuration: c, transport: testTransport())
        for storage in [http, s3] as [any RemoteStorage] {
            #expect(await errorCode { try await storage.upload(fileAt: file, attachment: attachment) } == "E_CONNECTION_REFUSED")
            #expect(await errorCode { try await storage.download(attachment, to: base.appendingPathComponent("out.bin")) } == "E_CONNECTION_REFUSED")
            #expect(await errorCode { try await storage.delete(attachment) } == "E_CONNECTION_REFUSED")
            #expect(await errorCode { try await storage.shutdown() } == nil)
        }
        #expect(await errorCode { try await http.upload(fileAt: base.appendingPathComponent("missing"), attachment: attachment) }?.hasPrefix("E_FNF") == true)
    }

    @Test func databaseFailuresAreCourierErrors() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        let device = try Device(base: base, name: "d", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote")))
        _ = try await device.queue.saveFile(data: Data("x".utf8), mediaType: nil, fileExtension: "txt")
        // The table goes away under the queue (a broken migration, a wiped database).
        try await device.db.write { try $0.execute(sql: "DROP TABLE attachments") }
        #expect(await errorCode { _ = try await device.queue.attachments() } == "E_DATABASE")
        #expect(await errorCode { _ = try await device.queue.attachment(id: "x") } == "E_DATABASE")
        #expect(await errorCode { _ = try await device.queue.saveFile(data: Data("y".utf8), mediaType: nil, fileExtension: "txt") } == "E_DATABASE")
        #expect(await errorCode { try await device.queue.deleteFile(id: "x") } == "E_DATABASE")
        #expect(await errorCode { try await device.queue.reconcile([]) } == "E_DATABASE")
        await device.queue.stopSync()
    }
}
