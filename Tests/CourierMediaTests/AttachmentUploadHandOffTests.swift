import Courier
import CourierAttachments
import CourierTestSupport
import CourierURLSession
import Foundation
import GRDB
import Testing

/// Issue 27, the app's side of upload hand-off: an attachment queue passed to
/// `AppLifecycle(…, uploads:)` hands its upload under way to the system at the hand-off
/// phase, with the downloads; the parts go up in upload tasks from files, and once they all
/// ended the queue completes the upload by itself. moto's log says which part went how.
@Suite(.serialized) struct AttachmentUploadHandOffTests {
    @Test(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server"))
    func theLifecycleHandsTheQueuesUploadOffAndTheQueueCompletesIt() async throws {
        let base = temporaryFolder("courier-queue-handoff")
        defer { try? FileManager.default.removeItem(at: base) }   // the test's files (up to 512 MiB) go with it
        let app = base.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let bucket = "queue-handoff-\(UUID().uuidString.prefix(8).lowercased())"
        var c = S3Configuration(bucket: bucket, prefix: "up/", endpoint: MotoServer.shared.endpoint!, accessKeyID: "testing", secretAccessKey: "testing")
        c.multipartThreshold = 5 << 20
        c.partSize = 5 << 20
        c.uploadConcurrency = 2
        let s3 = S3RemoteStorage(configuration: c)
        try await s3.createBucketIfNeeded()

        let downloader = Downloader(configuration: DownloaderConfiguration(rootDirectory: app), database: try CourierDatabase(path: base.appendingPathComponent("courier.sqlite").path))
        var options = AttachmentQueueOptions()
        options.syncInterval = .zero
        options.uploadBytesPerSecond = 16 << 20   // 4 s for the film: the hand-off finds it midway
        options.maxConcurrentTransfers = 1          // the clip waits behind it: not begun at the hand-off
        let reports = Locked<[(id: String, sent: Int64)]>([])
        options.uploadProgress = { attachment, progress in reports.withLock { $0.append((attachment.id, progress.sentBytes)) } }
        let queue = try AttachmentQueue(database: try DatabasePool(path: base.appendingPathComponent("app.sqlite").path),
                                        directory: app.appendingPathComponent("attachments"), remoteStorage: s3, options: options, downloader: downloader)
        let lifecycle = AppLifecycle(downloader: downloader, backgroundSessionIdentifier: "courier.tests.queue-handoff", uploads: [queue])
        try await lifecycle.launch()

        let film = Data((0..<(64 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let saved = try await queue.saveFile(data: film, mediaType: "video/mp4", fileExtension: "mp4")
        let clip = Data((0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 40_503 >> 7) })
        let waiting = try await queue.saveFile(data: clip, mediaType: "video/mp4", fileExtension: "mp4")
        try await queue.startSync()
        let journal = "attachment:\(saved.id)"
        #expect(try await eventually(timeout: .seconds(60)) { (try await downloader.database.upload(id: journal)?.record.confirmedBytes ?? 0) >= 20 << 20 })
        await lifecycle.sceneDidChange(to: .inactive)                       // the app is about to be suspended
        let reportsBefore = reports.withLock { $0.count }
        let handedOff = try await downloader.database.uploadHandOffPieces(uploadId: journal)
        let atHandOff = try await downloader.database.upload(id: journal)
        let confirmedAtHandOff = Set(atHandOff?.parts.map(\.number) ?? [])
        let confirmedBytesAtHandOff = atHandOff?.record.confirmedBytes ?? 0
        #expect(!handedOff.isEmpty)
        // The clip had not begun: it was begun at the hand-off, all three of its parts with the
        // system (moto's log says so below; its rows here would be a sample: on loopback the
        // system's three tasks can finish, and their rows go, before this line runs).

        // The system's progress reaches the queue's own reports while the film is away.
        #expect(try await eventually(timeout: .seconds(60)) { try await downloader.database.uploadHandOffPieces(uploadId: journal).isEmpty })
        // The reports arrive on their own schedule, after the pieces' rows may have gone: waited
        // for, not sampled. Two at least, past what the server had confirmed at the hand-off
        // (the system's tasks told them). How many more depends on how often the system calls
        // didSendBodyData: under load, FoundationNetworking gave two in two full runs.
        let awayReports = { reports.withLock { Array($0.dropFirst(reportsBefore)) }.filter { $0.id == saved.id }.map(\.sent) }
        #expect(try await eventually { Set(awayReports()).count >= 2 && (awayReports().last ?? 0) > confirmedBytesAtHandOff }, "\(awayReports())")
        let away = awayReports()
        #expect(away == away.sorted(), "\(away)")
        #expect(try await eventually(timeout: .seconds(60)) {
            let film = try await queue.attachment(id: saved.id)?.state, clip = try await queue.attachment(id: waiting.id)?.state
            return film == .synced && clip == .synced
        })
        let out = base.appendingPathComponent("back.bin")
        try await s3.download(saved, to: out)
        #expect(try Data(contentsOf: out) == film)
        try await s3.download(waiting, to: out)
        #expect(try Data(contentsOf: out) == clip)
        #expect(try await s3.pendingMultipartUploads().isEmpty)
        #expect(try await downloader.database.uploadHandOffPieces().isEmpty)
        // moto's log: the handed-off parts went up presigned (by the tasks), none of those the
        // upload had confirmed before the hand-off did.
        if let log = MotoServer.shared.log, let text = try? String(contentsOf: log, encoding: .utf8) {
            let byTasks = text.split(separator: "\n").filter { $0.contains("PUT /\(bucket)/up/\(saved.filename)?") && $0.contains("X-Amz-Signature=") && $0.hasSuffix("\" 200 -") }
                .compactMap { line in line.split(separator: "&").first { $0.hasPrefix("partNumber=") }.flatMap { Int($0.dropFirst(11)) } }
            #expect(Set(byTasks) == Set(handedOff.map(\.number)), "\(byTasks.sorted()) vs \(handedOff.map(\.number))")
            #expect(Set(byTasks).isDisjoint(with: confirmedAtHandOff))
            let clipParts = { (signed: Bool) in
                text.split(separator: "\n").filter { $0.contains("PUT /\(bucket)/up/\(waiting.filename)?") && $0.contains("X-Amz-Signature=") == signed && $0.hasSuffix("\" 200 -") }
                    .compactMap { line in line.split(whereSeparator: { $0 == "&" || $0 == "?" || $0 == " " }).first { $0.hasPrefix("partNumber=") }.flatMap { Int($0.dropFirst(11)) } }
            }
            #expect(Set(clipParts(true)) == [1, 2, 3] && clipParts(false).isEmpty, "the clip's parts: by tasks \(clipParts(true)), by the engine \(clipParts(false))")
        }
        await lifecycle.sceneDidChange(to: .active)
        await queue.stopSync()
        lifecycle.background?.invalidate()
        await downloader.shutdown()
        try await s3.shutdown()
    }
}
