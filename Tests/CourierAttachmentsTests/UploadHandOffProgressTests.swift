import Courier
import Foundation
import Testing
@testable import CourierAttachments

/// The system's progress on a handed-off upload, told as the queue's own
/// (`AttachmentQueue.uploadHandOffProgress`): only ever forward, and never after the
/// hand-off ended, also when a report the system computed before arrives after it.
@Suite struct UploadHandOffProgressTests {
    @Test func aReportArrivingAfterTheHandOffEndedIsNotTold() async throws {
        let base = tempDir()
        defer { try? FileManager.default.removeItem(at: base) }
        let told = Locked<[Int64]>([])
        let device = try Device(base: base, name: "phone", storage: try LocalRemoteStorage(directory: base.appendingPathComponent("remote"))) {
            $0.uploadProgress = { _, progress in told.withLock { $0.append(progress.sentBytes) } }
        }
        let saved = try await device.queue.saveFile(data: Data(repeating: 7, count: 1000), mediaType: nil, fileExtension: "bin")
        let journal = AttachmentQueue.downloadID(saved.id)
        let database = await device.queue.engineDatabase
        try await database.beginUpload(UploadRecord(id: journal, sourcePath: "/f.bin", sourceSize: 1000, sourceModified: 1, kind: .s3, target: "b/k", partSize: 500))
        let pieces = (1...2).map { UploadHandOffPiece(uploadId: journal, number: $0, offset: Int64($0 - 1) * 500, size: 500, md5: "", sha256: "",
                                                      bodyPath: base.appendingPathComponent("p\($0)").path, ownsBody: false, owner: nil) }
        #expect(try await database.handOffUploadPieces(pieces))

        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 500)
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 300)   // out of order: not told
        #expect(told.withLock { $0 } == [500])
        // An end heard while pieces are still out (an older hand-off's, late; or the last
        // piece's, while a report waited on its reads) does not let a smaller count through.
        await device.queue.uploadHandOffEnded(uploadId: journal)
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 400)
        #expect(told.withLock { $0 } == [500])
        // Both pieces end, then the queue hears of it; a report computed before arrives after.
        for piece in pieces { #expect(try await database.endUploadHandOff(piece, confirmed: nil)) }
        await device.queue.uploadHandOffEnded(uploadId: journal)
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 200)
        #expect(told.withLock { $0 } == [500])
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 600)
        #expect(told.withLock { $0 } == [500])
    }
}
