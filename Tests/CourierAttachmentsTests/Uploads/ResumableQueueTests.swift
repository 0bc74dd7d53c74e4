import Courier
import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierAttachments

/// The attachment queue over the resumable remotes: tus up and plain HTTP down between two
/// devices, upload progress reported, and a file that changes while it goes up.
struct ResumableQueueTests {
    @Test(.enabled(if: TusServer.shared.isAvailable, "needs aiohttp-tus"))
    func attachmentsGoUpWithTusAndComeDownOnAnotherDevice() async throws {
        let base = temporaryFolder("courier-tus-queue")
        defer { try? FileManager.default.removeItem(at: base) }   // the test's files (up to 512 MiB) go with it
        let data = pseudoRandom(3 << 20, seed: 77)
        func device(_ name: String, _ progress: (@Sendable (Attachment, UploadProgress) -> Void)? = nil) throws -> (DatabasePool, AttachmentQueue) {
            try FileManager.default.createDirectory(at: base.appendingPathComponent(name), withIntermediateDirectories: true)
            let pool = try DatabasePool(path: base.appendingPathComponent("\(name)/app.sqlite").path)
            var options = AttachmentQueueOptions()
            options.syncInterval = .zero
            options.uploadProgress = progress
            let tus = try TusRemoteStorage(endpoint: TusServer.shared.endpoint, filesURL: TusServer.shared.filesURL, chunkSize: 1 << 20, transport: testTransport())
            return (pool, try AttachmentQueue(database: pool, directory: base.appendingPathComponent("\(name)/attachments"), remoteStorage: tus, options: options, transport: testTransport()))
        }
        let seen = Locked<[UploadProgress]>([])
        let (_, a) = try device("a") { _, p in seen.withLock { $0.append(p) } }
        let saved = try await a.saveFile(data: data, mediaType: "video/mp4", fileExtension: "mp4")
        try await a.startSync()
        await a.sync()
        #expect(try await a.attachment(id: saved.id)?.state == .synced)
        #expect(try Data(contentsOf: TusServer.shared.directory!.appendingPathComponent(saved.filename)) == data)
        let reports = seen.withLock { $0 }
        #expect(reports.last?.confirmedBytes == Int64(data.count) && reports.count >= 3, "progress as chunks went up: \(reports.count) reports")
        await a.stopSync()
        try await a.remoteStorage.shutdown()

        let (_, b) = try device("b")
        try await b.reconcile([WatchedAttachmentItem(id: saved.id, filename: saved.filename)])
        try await b.startSync()
        await b.sync()
        let down = try #require(try await b.attachment(id: saved.id))
        #expect(down.state == .synced)
        #expect(try Data(contentsOf: try #require(b.localURL(for: down))) == data)
        await b.stopSync()
        try await b.remoteStorage.shutdown()
    }

    @Test(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server"))
    func aFileThatChangesWhileItGoesUpIsUploadedAgainWhole() async throws {
        let dir = temporaryFolder("courier-s3-changing")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files (up to 512 MiB) go with it
        var c = S3Configuration(bucket: "changing-\(UUID().uuidString.prefix(8).lowercased())", prefix: "up/", endpoint: MotoServer.shared.endpoint!,
                                accessKeyID: "testing", secretAccessKey: "testing")
        c.multipartThreshold = 5 << 20
        c.partSize = 5 << 20
        c.uploadConcurrency = 1
        let s3 = S3RemoteStorage(configuration: c, transport: testTransport())
        try await s3.createBucketIfNeeded()
        let file = dir.appendingPathComponent("clip.bin")
        let old = pseudoRandom(20 << 20, seed: 8), new = pseudoRandom(20 << 20, seed: 9)
        try old.write(to: file)
        // After the first part is confirmed, the app rewrites the file (same size).
        let rewritten = Locked(false)
        let journal = UploadJournal(database: try CourierDatabase.inMemory(), id: "attachment:c") { p in
            guard p.confirmedBytes >= 5 << 20 else { return }
            rewritten.withLock { done in
                guard !done else { return }
                done = true
                try? new.write(to: file)   // a failed rewrite leaves the old bytes: the test then fails on the object
            }
        }
        try await s3.upload(fileAt: file, attachment: Attachment(id: "c", filename: "clip.bin", state: .queuedUpload), journal: journal)
        let out = dir.appendingPathComponent("got.bin")
        try await s3.download(Attachment(id: "c", filename: "clip.bin", state: .synced), to: out)
        #expect(rewritten.withLock { $0 })
        #expect(try Data(contentsOf: out) == new, "the object is the new file, never a mix")
        #expect(try await s3.pendingMultipartUploads().isEmpty, "the mixed upload was aborted")
        try await s3.shutdown()
    }
}
