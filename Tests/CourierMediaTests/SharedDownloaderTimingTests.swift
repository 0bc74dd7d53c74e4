import CourierTestSupport
import Courier
import CourierAttachments
@testable import CourierDocuments
import CourierOrigin
import CourierURLSession
import Foundation
import GRDB
import Testing
@testable import CourierMedia

/// One `Downloader` for every feature of an app (issue 25): a media library, an attachment
/// queue and a documents mirror share it, so one concurrency limit and one background
/// hand-off cover all of them. Every request needs the token (the origin refuses others),
/// so each feature's downloads carry their own credentials through the shared engine.
/// A `…TimingTests` suite: it runs alone (scripts/test), since the hand-off must find both
/// throttled transfers running; under the whole parallel suite one hand-off once found
/// nothing to hand off (see the session note).
@Suite(.serialized) struct SharedDownloaderTimingTests {
    static let size = 6 << 20

    /// The sizes of the `.partial` files under `folder`.
    static func partialSizes(under folder: URL) -> [Int64] {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: folder.path)) ?? []   // not made yet: none
        return names.filter { $0.hasSuffix(".partial") }.map { PartialFile.length(at: folder.appendingPathComponent($0)) }
    }

    @Test func oneDownloaderServesTheLibraryTheQueueAndTheMirror() async throws {
        let base = temporaryFolder("courier-shared")
        defer { try? FileManager.default.removeItem(at: base) }
        let served = base.appendingPathComponent("served"), app = base.appendingPathComponent("app")
        for dir in ["jellyfin/items", "jellyfin/media", "files", "docs"] {
            try FileManager.default.createDirectory(at: served.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        func bytes(_ seed: Int) -> Data { Data((0..<Self.size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }) }
        let film = bytes(1), photo = bytes(2), doc = bytes(3)
        try Data(#"{"Id":"f1","Type":"Movie","Name":"Film","MediaSources":[{"Id":"src1","Container":"mp4","Size":\#(Self.size)}]}"#.utf8)
            .write(to: served.appendingPathComponent("jellyfin/items/f1.json"))
        try film.write(to: served.appendingPathComponent("jellyfin/media/src1"))
        try photo.write(to: served.appendingPathComponent("files/photo.bin"))
        try doc.write(to: served.appendingPathComponent("docs/readme.bin"))
        let origin = try await CourierOrigin.start(directory: served)
        origin.requireToken("TOKEN")
        var slow = Fault(); slow.bytesPerSecond = 1 << 20
        origin.setFault(slow, for: "/Items/src1/Download")
        origin.setFault(slow, for: "/files/photo.bin")

        // The app's one downloader, and its three features under its root.
        var config = DownloaderConfiguration(rootDirectory: app)
        config.maxConcurrentDownloads = 2
        config.freeSpaceReserve = 0
        let downloader = Downloader(configuration: config, database: try CourierDatabase(path: base.appendingPathComponent("courier.sqlite").path))
        let token = [(name: "X-Emby-Token", value: "TOKEN")]
        let library = try MediaLibrary(root: app.appendingPathComponent("media"), server: try JellyfinServer(baseURL: origin.url("/"), token: "TOKEN"),
                                       downloader: downloader)
        let appDB = try DatabasePool(path: base.appendingPathComponent("app.sqlite").path)
        var options = AttachmentQueueOptions()
        options.syncInterval = .zero
        let queue = try AttachmentQueue(database: appDB, directory: app.appendingPathComponent("attachments"),
                                        remoteStorage: try HTTPRemoteStorage(baseURL: origin.url("/files"), headers: token), options: options,
                                        downloader: downloader)
        let mirror = try MirrorContainer(root: app.appendingPathComponent("docs"), storage: try HTTPRemoteStorage(baseURL: origin.url("/"), headers: token),
                                         downloader: downloader)
        try Placeholder(key: "docs/readme.bin", size: Int64(Self.size)).write(for: app.appendingPathComponent("docs/docs/readme.bin"))

        // How many the engine runs at once, counted at each of its events (a run that starts
        // or ends says so; the count is read in the engine's own order, after the event).
        let most = Locked(0)
        let everything = downloader.events()
        let sampler = Task {
            for await _ in everything {
                let n = await downloader.runningIDs.count
                most.withLock { $0 = max($0, n) }
            }
        }

        // A film and a photo start; the document waits its turn behind them.
        let version = try await library.start(itemId: "f1", versionId: "src1")
        try await queue.reconcile([WatchedAttachmentItem(id: "photo", filename: "photo.bin")])
        let pass = Task { await queue.sync() }
        #expect(try await eventually { await downloader.runningIDs.count == 2 })
        let running = await downloader.runningIDs
        #expect(running.contains { $0.hasPrefix("media:") } && running.contains { $0.hasPrefix("attachment:") })
        // Both have bytes to keep before the hand-off (a loaded machine may be slow to start).
        #expect(try await eventually(timeout: .seconds(60)) { Self.partialSizes(under: app).filter { $0 >= 256 << 10 }.count == 2 })
        let queuedEvents = downloader.events()
        let read = Task { try await Documents(container: mirror).readInPlaceBytes("docs/readme.bin") }
        // Queued: the engine publishes that, then starts what it may in the same step, so
        // what runs once it is seen is what the limit let run.
        for await event in queuedEvents { if case let .stateChanged(id, .queued, _) = event, id.hasPrefix("doc:") { break } }
        #expect(await downloader.runningIDs.count == 2)   // the document is queued, not a third connection

        // A hand-off of the running two takes the film and the photo; the document then runs in the engine.
        let transfers = BackgroundTransfers(downloader: downloader, handsOffCredentials: true)
        let handed = await transfers.handOffAll(among: running)
        #expect(handed.count == 2 && handed.contains { $0.hasPrefix("media:") } && handed.contains { $0.hasPrefix("attachment:") })
        origin.setFault(nil, for: "/Items/src1/Download")
        origin.setFault(nil, for: "/files/photo.bin")

        let report = try await library.completion(of: version)
        #expect(try Data(contentsOf: app.appendingPathComponent("media").appendingPathComponent(report.mediaPath)) == film)
        await pass.value
        #expect(try await queue.attachment(id: "photo")?.state == .synced)
        #expect(try Data(contentsOf: app.appendingPathComponent("attachments/photo.bin")) == photo)
        #expect(try await read.value == doc)
        sampler.cancel()
        #expect(most.withLock { $0 } == 2)

        // The system's tasks asked for the rest of what each had kept, with the token.
        for path in ["/Items/src1/Download", "/files/photo.bin"] {
            let asks = origin.requests.filter { $0.path == path && $0.status != 401 }
            #expect(asks.count == 2 && asks.last?.range?.hasPrefix("bytes=") == true && asks.last?.range != "bytes=0-")
        }
        #expect(!origin.requests.contains { $0.status == 401 })

        await queue.stopSync()
        await mirror.shutdown()
        await library.shutdown()
        transfers.invalidate()
        await downloader.shutdown()
        try? await origin.stop()   // the test is over: a failed stop changes nothing it checked
    }
}
