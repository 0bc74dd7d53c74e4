import CourierOrigin
import Foundation
import Testing
@testable import CourierCore
@_spi(Testing) import CourierURLSession

/// Issue 48: continued processing on Linux, through a scripted system: the covered download
/// stays in the engine at the hand-off phase while the others go to the background session
/// (URLSession's default configuration stands in), the task shows its progress and ends with
/// it, the system's expiry hands the download to the session keeping what it holds, and a
/// refusal leaves the present hand-off.
@Suite(.serialized) struct ContinuedTransfersTests {
    static let size = 4 << 20

    /// A system that starts every task at once, or refuses.
    final class ScriptedSystem: ContinuedProcessingSystem, @unchecked Sendable {   // `tasks` under its lock
        let refuses: Bool
        let lock = NSLock()
        var tasks: [ScriptedTask] = []
        init(refuses: Bool = false) { self.refuses = refuses }
        func submit(identifier: String, title: String, subtitle: String, run: @escaping @Sendable (any ContinuedProcessingTask) -> Void) throws {
            if refuses { throw CourierError(.invalidState, "refused") }
            let task = ScriptedTask(identifier)
            lock.withLock { tasks.append(task) }
            run(task)
        }
        var task: ScriptedTask? { lock.withLock { tasks.first } }
    }

    final class ScriptedTask: ContinuedProcessingTask, @unchecked Sendable {   // every field under its lock
        let identifier: String
        let lock = NSLock()
        var reports: [(Int64, Int64)] = []
        var success: Bool?
        var expiry: (@Sendable () -> Void)?
        init(_ identifier: String) { self.identifier = identifier }
        func report(completed: Int64, total: Int64) { lock.withLock { reports.append((completed, total)) } }
        func end(success: Bool) { lock.withLock { self.success = self.success ?? success } }
        func onExpiry(_ handler: @escaping @Sendable () -> Void) { lock.withLock { expiry = handler } }
        var ended: Bool? { lock.withLock { success } }
        func expire() { lock.withLock { expiry }?() }
    }

    private func throttled(_ fx: Fixture, _ name: String, rate: Int64) throws {
        try fx.serve(name, size: Self.size)
        var slow = Fault(); slow.bytesPerSecond = rate
        fx.origin.setFault(slow, for: "/\(name)")
    }

    @Test func theCoveredDownloadStaysInTheProcessAndEndsTheTaskWhenItCompletes() async throws {
        try await withFixture { fx in
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let lifecycle = AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.continued")
            let system = ScriptedSystem()
            let continued = ContinuedTransfers(lifecycle: lifecycle, system: system, identifierPrefix: "com.example.app.transfers")
            try throttled(fx, "film.bin", rate: 2 << 20)
            try throttled(fx, "other.bin", rate: 256 << 10)
            try await d.enqueue(DownloadRequest(id: "film", url: fx.url("film.bin"), destination: "film.bin"))
            try await d.enqueue(DownloadRequest(id: "other", url: fx.url("other.bin"), destination: "other.bin"))
            let identifier = await continued.begin(["film", "missing"], title: "Downloading a film", subtitle: "4 MB")
            #expect(identifier?.hasPrefix("com.example.app.transfers.") == true)
            #expect(continued.coveredIDs == ["film"])
            await lifecycle.sceneDidChange(to: .inactive)
            #expect(try await d.record(id: "other")?.state == .handedOff)
            #expect(try await d.record(id: "film")?.state != .handedOff, "the task carries it in the process")
            #expect(try await d.waitForCompletion(id: "film").state == .completed)
            let task = try #require(system.task)
            #expect(try await eventually { task.ended != nil })
            #expect(task.ended == true)
            let reports = task.lock.withLock { task.reports }
            #expect(reports.last.map { $0.0 == Int64(Self.size) && $0.1 == Int64(Self.size) } == true, "\(reports.suffix(3))")
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.0 <= $1.0 }, "the bar never goes back")
            #expect(continued.coveredIDs.isEmpty)
            lifecycle.background?.invalidate()
            await d.shutdown()
        }
    }

    /// A throttled film covered by a task once 256 KiB arrived, then the system's expiry; the
    /// task ends as a failure. Returns the downloader, its lifecycle and the film's record.
    private func expireACoveredFilm(_ fx: Fixture, background: Bool) async throws -> (Downloader, AppLifecycle, DownloadRecord) {
        let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
        let lifecycle = background ? AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.continued") : AppLifecycle(downloader: d, background: nil)
        let system = ScriptedSystem()
        let continued = ContinuedTransfers(lifecycle: lifecycle, system: system, identifierPrefix: "com.example.app.transfers")
        try throttled(fx, "film.bin", rate: 512 << 10)
        try await d.enqueue(DownloadRequest(id: "film", url: fx.url("film.bin"), destination: "film.bin"))
        #expect(try await eventually { fx.partialLength("film.bin") >= 256 << 10 })
        #expect(await continued.begin(["film"], title: "Downloading a film", subtitle: "") != nil)
        let task = try #require(system.task)
        task.expire()
        #expect(try await eventually { task.ended != nil })
        #expect(task.ended == false)
        return (d, lifecycle, try #require(try await d.record(id: "film")))
    }

    @Test func theSystemsExpiryHandsTheDownloadToTheSessionKeepingWhatItHolds() async throws {
        try await withFixture { fx in
            let (d, lifecycle, record) = try await expireACoveredFilm(fx, background: true)
            #expect(record.state == .handedOff)
            // The session's task asks for the rest, from what the engine had kept (durable: at
            // most what it had received).
            #expect(try await eventually { fx.origin.requests.count >= 2 })
            let from = fx.origin.requests.last?.range.flatMap { Int64($0.dropFirst("bytes=".count).prefix { $0.isNumber }) } ?? 0
            #expect(from > 0 && from <= record.bytesReceived, "\(record.bytesReceived): \(fx.origin.requests.map { $0.range ?? "-" })")
            lifecycle.background?.invalidate()
            await d.shutdown()
        }
    }

    /// Without a background session (an app that has none), the expiry pauses the covered
    /// download: the record says paused, the partial keeps what arrived, and a resume asks
    /// only for the rest.
    @Test func theSystemsExpiryPausesTheDownloadWhenThereIsNoSession() async throws {
        try await withFixture { fx in
            let (d, _, record) = try await expireACoveredFilm(fx, background: false)
            #expect(record.state == .paused, "\(record.state)")
            #expect(record.bytesReceived >= 256 << 10 && fx.partialLength("film.bin") >= record.bytesReceived, "what arrived is kept")
            fx.origin.setFault(Fault(), for: "/film.bin")
            try await d.resume(id: "film")
            #expect(try await d.waitForCompletion(id: "film").state == .completed)
            let from = fx.origin.requests.last?.range.flatMap { Int64($0.dropFirst("bytes=".count).prefix { $0.isNumber }) } ?? 0
            #expect(from == record.bytesReceived, "only the rest: \(fx.origin.requests.map { $0.range ?? "-" })")
            await d.shutdown()
        }
    }

    @Test func aRefusalLeavesThePresentHandOff() async throws {
        try await withFixture { fx in
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let lifecycle = AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.continued")
            let continued = ContinuedTransfers(lifecycle: lifecycle, system: ScriptedSystem(refuses: true), identifierPrefix: "com.example.app.transfers")
            try throttled(fx, "film.bin", rate: 256 << 10)
            try await d.enqueue(DownloadRequest(id: "film", url: fx.url("film.bin"), destination: "film.bin"))
            #expect(await continued.begin(["film"], title: "Downloading a film", subtitle: "") == nil)
            #expect(continued.coveredIDs.isEmpty)
            await lifecycle.sceneDidChange(to: .inactive)
            #expect(try await d.record(id: "film")?.state == .handedOff)
            lifecycle.background?.invalidate()
            await d.shutdown()
        }
    }

    /// Counts the hand-offs of a feature's uploads (an attachment queue stands behind it in an app).
    final class CountingUploads: BackgroundUploading, @unchecked Sendable {   // `handOffs` under its lock
        let lock = NSLock()
        var handOffs = 0
        func handOffUploads(to folder: URL) async -> [UploadTaskRequest] { lock.withLock { handOffs += 1 }; return [] }
        func uploadHandOffEnded(uploadId: String) async {}
        func uploadHandOffProgress(uploadId: String, inFlight: Int64) async {}
        var count: Int { lock.withLock { handOffs } }
    }

    /// An upload the task covers stays in the process at the hand-off phase; the task shows
    /// what the server confirmed, as its record says, and ends when the record goes (the
    /// server holds the file). An expiry hands the uploads to the system.
    @Test func aCoveredUploadStaysInTheProcessAndEndsTheTaskWhenItsRecordGoes() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            let uploads = CountingUploads()
            let lifecycle = AppLifecycle(downloader: d, backgroundSessionIdentifier: "courier.tests.continued", uploads: [uploads])
            let system = ScriptedSystem()
            let continued = ContinuedTransfers(lifecycle: lifecycle, system: system, identifierPrefix: "com.example.app.transfers")
            for id in ["attachment:clip", "attachment:other"] {
                try await d.database.beginUpload(UploadRecord(id: id, sourcePath: "/videos/\(id).mov", sourceSize: 1000, sourceModified: 1, kind: .tus,
                                                              target: "https://up.example/files", partSize: 100))
            }
            #expect(await continued.begin([], uploads: ["attachment:clip", "attachment:gone"], title: "Sending the clip", subtitle: "") != nil)
            let task = try #require(system.task)
            await lifecycle.sceneDidChange(to: .inactive)
            #expect(uploads.count == 0, "the uploads stay in the process while the task carries one")
            try await d.database.noteUploadPart(UploadPart(uploadId: "attachment:clip", number: 1, offset: 0, size: 400, etag: nil, md5: "", sha256: ""),
                                                confirmedBytes: 400)
            #expect(try await eventually { task.lock.withLock { task.reports.contains { $0 == (400, 1000) } } })
            _ = try await d.database.deleteUpload(id: "attachment:clip")
            #expect(try await eventually { task.ended != nil })
            #expect(task.ended == true && task.lock.withLock { task.reports.last.map { $0 == (1000, 1000) } } == true)

            await lifecycle.sceneDidChange(to: .active)
            #expect(await continued.begin([], uploads: ["attachment:other"], title: "Sending", subtitle: "") != nil)
            let second = try #require(system.lock.withLock { system.tasks.last })
            second.expire()
            #expect(try await eventually { second.ended != nil })
            #expect(second.ended == false && uploads.count == 1, "the expiry handed the uploads to the system")
            lifecycle.background?.invalidate()
            await d.shutdown()
        }
    }
}
