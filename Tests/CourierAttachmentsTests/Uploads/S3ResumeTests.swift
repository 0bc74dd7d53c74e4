import Courier
import Crypto
import CourierTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import CourierAttachments

/// S3 multipart uploads that go on where they stopped, against moto: the same upload id
/// after a stop, only missing parts sent again (counted in the server's own log), a changed
/// file never completed as a mix, and abandoned uploads aborted.
@Suite(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server (pip install 'moto[server]')"))
struct S3ResumeTests {
    private let partSize: Int64 = 5 << 20

    private func storage(_ bucket: String) async throws -> S3RemoteStorage {
        var c = S3Configuration(bucket: bucket, prefix: "up/", endpoint: MotoServer.shared.endpoint!, accessKeyID: "testing", secretAccessKey: "testing")
        c.multipartThreshold = partSize
        c.partSize = partSize
        c.uploadConcurrency = 2
        let s = S3RemoteStorage(configuration: c, transport: testTransport())
        try await s.createBucketIfNeeded()
        return s
    }

    private func journal(_ dir: URL, progress: (@Sendable (UploadProgress) -> Void)? = nil) throws -> UploadJournal {
        UploadJournal(database: try CourierDatabase(path: dir.appendingPathComponent("uploads.sqlite").path), id: "attachment:a1", progress: progress)
    }

    private func tempDir() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("courier-s3-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Starts the upload and cancels it once `stopAt` bytes are confirmed (a kill, as far as
    /// the journal is concerned: the record stays as the last commit left it).
    private func uploadUntil(_ stopAt: Int64, _ s: S3RemoteStorage, _ file: URL, _ attachment: Attachment, _ dir: URL) async throws {
        let (reached, mark) = AsyncStream<Void>.makeStream()
        let task = Task {
            defer { mark.finish() }   // an upload that ends short of the mark ends the wait too
            try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir) { p in
                if p.confirmedBytes >= stopAt { mark.yield() }
            })
        }
        for await _ in reached { break }
        task.cancel()
        _ = await task.result
    }

    private func object(_ s: S3RemoteStorage, _ attachment: Attachment, _ dir: URL) async throws -> Data {
        let out = dir.appendingPathComponent("got.bin")
        try await s.download(attachment, to: out)
        return try Data(contentsOf: out)
    }

    @Test func aStoppedUploadGoesOnWithTheSameUploadAndSendsOnlyMissingParts() async throws {
        let dir = try tempDir()
        let bucket = "courier-up-\(UUID().uuidString.prefix(8).lowercased())"
        let s = try await storage(bucket)
        let data = pseudoRandom(Int(partSize) * 6 + 12_345, seed: 41)   // 7 parts
        let file = dir.appendingPathComponent("video.mov")
        try data.write(to: file)
        let attachment = Attachment(id: "a1", filename: "video.mov", state: .queuedUpload)

        try await uploadUntil(partSize * 3, s, file, attachment, dir)
        let kept = try #require(try await journal(dir).database.upload(id: "attachment:a1"))
        let uploadID = try #require(kept.record.remoteId)
        #expect(kept.parts.count >= 3 && kept.record.confirmedBytes >= partSize * 3)
        let before = MotoServer.shared.acceptedParts(bucket: bucket, key: "up/video.mov")

        let resumedFrom = Locked<Int64?>(nil)
        try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir) { p in
            resumedFrom.withLock { if $0 == nil { $0 = p.resumedFrom } }
        })
        #expect(try await object(s, attachment, dir) == data)
        #expect(try await journal(dir).database.upload(id: "attachment:a1") == nil)
        #expect(try await s.pendingMultipartUploads().isEmpty)
        #expect((resumedFrom.withLock { $0 } ?? 0) >= partSize * 3)
        // From the server's side: every part accepted once, but for the ones in flight at the stop.
        if let before, let after = MotoServer.shared.acceptedParts(bucket: bucket, key: "up/video.mov") {
            #expect(after.count <= 7 + 2, "parts accepted: \(after)")
            #expect(Set(after[before.count...]).isDisjoint(with: Set(kept.parts.map(\.number))), "a confirmed part went up again: \(after)")
        }
        _ = uploadID
        try await s.shutdown()
    }

    @Test func aFileChangedBetweenStopAndResumeIsUploadedWholeNeverMixed() async throws {
        for sameSizeAndTime in [false, true] {
            let dir = try tempDir()
            let s = try await storage("courier-ch-\(UUID().uuidString.prefix(8).lowercased())")
            let file = dir.appendingPathComponent("clip.bin")
            let old = pseudoRandom(Int(partSize) * 4, seed: 5)
            try old.write(to: file)
            let attachment = Attachment(id: "a1", filename: "clip.bin", state: .queuedUpload)
            try await uploadUntil(partSize, s, file, attachment, dir)
            let oldUpload = try #require(try await journal(dir).database.upload(id: "attachment:a1")?.record.remoteId)

            let new = sameSizeAndTime ? pseudoRandom(old.count, seed: 6) : pseudoRandom(old.count + 999, seed: 6)
            let mtime = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as! Date
            try new.write(to: file)
            // The hardest case: same size, same modification time; only the hash of what was sent tells.
            if sameSizeAndTime { try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: file.path) }

            try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir))
            #expect(try await object(s, attachment, dir) == new, "same size and time: \(sameSizeAndTime)")
            #expect(try await !s.pendingMultipartUploads().contains { $0.uploadID == oldUpload })
            try await s.shutdown()
        }
    }

    @Test func abandonedUploadsAreAbortedAndKeptOnesStay() async throws {
        let s = try await storage("courier-ab-\(UUID().uuidString.prefix(8).lowercased())")
        let kept = try await s.createMultipart(key: "up/kept.bin", headers: [])
        let abandoned = try await s.createMultipart(key: "up/gone.bin", headers: [])
        // Not old enough yet: nothing aborted (moto says every upload began in 2010, so "now"
        // is set back to then).
        let then = try #require(S3RemoteStorage.isoDate("2010-11-10T20:48:33.000Z"))
        #expect(try await s.abortAbandonedUploads(olderThan: 3600, keeping: [], now: then).isEmpty)
        #expect(try await s.abortAbandonedUploads(olderThan: 3600, keeping: [kept]) == [abandoned])
        #expect(try await s.pendingMultipartUploads().map(\.uploadID) == [kept])
        try await s.abortAbandonedUploads(olderThan: 0)
        #expect(try await s.pendingMultipartUploads().isEmpty)
        try await s.shutdown()
    }

    /// Issue 29: a power cut between `CreateMultipartUpload` and the commit of its id leaves
    /// a record with no handle and an upload on the server nothing knows. The next run
    /// aborts the uploads of that key begun around the record (not another key's, not one a
    /// record owns), then starts its own. (Found by scripts/power-loss, before the record and the handle were
    /// written durably; the sweep closes the window that remains.)
    @Test func anUploadBegunButNeverRecordedIsAbortedWhenTheUploadStartsAgain() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }   // a test's scratch folder
        let bucket = "courier-lost-\(UUID().uuidString.prefix(8).lowercased())"
        let s = try await storage(bucket)
        let data = pseudoRandom(Int(partSize) * 2 + 1_000, seed: 43)
        let file = dir.appendingPathComponent("video.mov")
        try data.write(to: file)
        let source = try UploadSource(url: file)
        // moto says every upload began at 2010-11-10T20:48:33Z: the record is from just before.
        let begun = try #require(S3RemoteStorage.isoDate("2010-11-10T20:48:00.000Z"))
        try await journal(dir).database.beginUpload(UploadRecord(id: "attachment:a1", sourcePath: file.path, sourceSize: source.size, sourceModified: source.modified,
                                                                 kind: .s3, target: "\(bucket)/up/video.mov", partSize: partSize, at: begun))
        let lost = try await s.createMultipart(key: "up/video.mov", headers: [])
        let other = try await s.createMultipart(key: "up/other.mov", headers: [])
        // The same key's upload that another record of the journal owns stays too.
        let owned = try await s.createMultipart(key: "up/video.mov", headers: [])
        let db = try journal(dir).database
        try await db.beginUpload(UploadRecord(id: "attachment:a2", sourcePath: file.path, sourceSize: source.size, sourceModified: source.modified,
                                              kind: .s3, target: "\(bucket)/up/video.mov", partSize: partSize, at: begun))
        try await db.noteUploadHandle(id: "attachment:a2", remoteId: owned)
        try await s.upload(fileAt: file, attachment: Attachment(id: "a1", filename: "video.mov", state: .queuedUpload), journal: try journal(dir))
        #expect(try await object(s, Attachment(id: "a1", filename: "video.mov", state: .queuedUpload), dir) == data)
        let pending = try await s.pendingMultipartUploads().map(\.uploadID)
        #expect(!pending.contains(lost), "the upload the cut-off run began is aborted")
        #expect(Set(pending) == [other, owned], "another key's upload, and one a record owns, stay")
        try await s.shutdown()
    }

    @Test func aPartWhoseETagIsNotItsMD5IsRefused() throws {
        let chunk = "5d41402abc4b2a76b9719d911017c592"   // MD5 of "hello"
        let plain = HTTPFields()
        try S3RemoteStorage.checkPartETag("\"5d41402abc4b2a76b9719d911017c592\"", plain, md5Hex: chunk, "p")
        #expect(throws: CourierError.self) { try S3RemoteStorage.checkPartETag("\"00000000000000000000000000000000\"", plain, md5Hex: chunk, "p") }
        try S3RemoteStorage.checkPartETag("\"opaque-etag\"", plain, md5Hex: chunk, "p")   // not an MD5: says nothing
        // KMS and customer-key objects have ETags that look like MD5s but are not.
        try S3RemoteStorage.checkPartETag("\"00000000000000000000000000000000\"", HTTPFields([("x-amz-server-side-encryption", "aws:kms")]), md5Hex: chunk, "p")
        try S3RemoteStorage.checkPartETag("\"00000000000000000000000000000000\"", HTTPFields([("x-amz-server-side-encryption-customer-algorithm", "AES256")]), md5Hex: chunk, "p")
    }

    @Test func partsStayWithinS3sLimits() {
        var c = S3Configuration(bucket: "b", accessKeyID: "k", secretAccessKey: "s")
        c.partSize = 1 << 20
        let s = S3RemoteStorage(configuration: c, transport: testTransport())
        #expect(s.partSize(forSize: 100 << 20) == 5 << 20)                  // S3's minimum
        #expect(s.partCount(forSize: 200 << 30) <= 10_000)                  // never more than 10,000 parts
        c.partSize = 6 << 30
        #expect(S3RemoteStorage(configuration: c, transport: testTransport()).partSize(forSize: 1 << 30) == 5 << 30)   // nor over 5 GiB
    }
}
