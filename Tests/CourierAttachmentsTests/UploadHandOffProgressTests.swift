import Courier
import Foundation
import Testing
@testable import CourierAttachments

/// The system's progress on a handed-off upload, told as the queue's own
/// (`AttachmentQueue.uploadHandOffProgress`): only ever forward, also when a report the
/// system computed before the hand-off's end arrives after it.
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
        try await device.queue.engineDatabase.beginUpload(UploadRecord(id: journal, sourcePath: "/f.bin", sourceSize: 1000, sourceModified: 1,
                                                                       kind: .s3, target: "b/k", partSize: 100))

        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 500)
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 300)   // out of order: not told
        #expect(told.withLock { $0 } == [500])
        await device.queue.uploadHandOffEnded(uploadId: journal)
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 200)   // computed before the end, delivered after
        #expect(told.withLock { $0 } == [500])

        // The next hand-off of that upload reports afresh.
        _ = await device.queue.handOffUploads(to: base.appendingPathComponent("stash"))
        await device.queue.uploadHandOffProgress(uploadId: journal, inFlight: 100)
        #expect(told.withLock { $0 } == [500, 100])
    }
}
