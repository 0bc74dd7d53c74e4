import Foundation
import GRDB
import Testing
@testable import CourierCore
import CourierOrigin

/// Completion in the app's transaction (issue 26): the app's row, Courier's record and the
/// file in place change together, or none of them does. The kill half is
/// `CompletionHookKillTests` (CourierCLITests), with real SIGKILLs.
@Suite struct CompletionHookTests {
    /// The app's own table, in the database it shares with Courier.
    static func appDatabase(_ fx: Fixture) throws -> (DatabaseQueue, CourierDatabase) {
        let queue = try DatabaseQueue(path: fx.dbPath)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS media (id TEXT PRIMARY KEY, localPath TEXT)")
            for name in ["a", "b", "c"] { try db.execute(sql: "INSERT OR IGNORE INTO media (id) VALUES (?)", arguments: ["photo:\(name)"]) }
        }
        return (queue, try CourierDatabase(writer: queue))
    }

    static func localPath(_ queue: DatabaseQueue, _ id: String) throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "SELECT localPath FROM media WHERE id = ?", arguments: [id]) }
    }

    @Test func theHookWritesTheAppsRowInTheWriteThatCompletes() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let body = try fx.serve("a.bin", size: 300_000)
        let (queue, database) = try Self.appDatabase(fx)
        let d = Downloader(configuration: fx.configuration(), database: database, transportOrDefault: fx.transport())
        let seen = LockedBox<[String]>([])
        let root = fx.root
        try d.onCompletion(ofIDsWithPrefix: "photo:") { db, record in
            // Inside the write: Courier's record already says completed, and the file is not
            // at its path yet (its rename is the write's last step).
            let state = try String.fetchOne(db, sql: "SELECT state FROM courierDownload WHERE id = ?", arguments: [record.id])
            let inPlace = FileManager.default.fileExists(atPath: root.appendingPathComponent(record.localFinalPath).path)
            seen.mutate { $0.append("\(record.id) \(state ?? "-") \(record.state.rawValue) \(inPlace)") }
            try db.execute(sql: "UPDATE media SET localPath = ? WHERE id = ?", arguments: [record.localFinalPath, record.id])
        }
        try await d.fetchKeepingRecord(DownloadRequest(id: "photo:a", url: fx.url("a.bin"), destination: "photos/a.bin"))
        #expect(seen.value == ["photo:a completed completed false"])
        #expect(try Self.localPath(queue, "photo:a") == "photos/a.bin")
        #expect(fx.finalData("photos/a.bin") == body)
        await d.shutdown()
    }

    /// A hook that throws: nothing of the write happens (no completed record, no row, no
    /// file in place), the download fails with E_COMPLETION_HOOK and says why; resuming
    /// with a hook that works completes it with no byte fetched again.
    @Test func aHookThatThrowsLeavesNothingDoneAndResumingRunsItAgain() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let body = try fx.serve("b.bin", size: 200_000)
        let (queue, database) = try Self.appDatabase(fx)
        let d = Downloader(configuration: fx.configuration(), database: database, transportOrDefault: fx.transport())
        let refuse = LockedBox(true)
        try d.onCompletion(ofIDsWithPrefix: "photo:") { db, record in
            try db.execute(sql: "UPDATE media SET localPath = ? WHERE id = ?", arguments: [record.localFinalPath, record.id])
            if refuse.value { throw CourierError(.writeFailed, "the photo table is full") }
        }
        try await d.enqueue(DownloadRequest(id: "photo:b", url: fx.url("b.bin"), destination: "photos/b.bin"))
        let error = await #expect(throws: CourierError.self) { try await d.waitForCompletion(id: "photo:b") }
        #expect(error?.code == .completionHook)
        #expect(error?.message.contains("the photo table is full") == true)
        let failed = try #require(try await database.record(id: "photo:b"))
        #expect(failed.state == .failed && failed.lastError?.code == .completionHook)
        #expect(try Self.localPath(queue, "photo:b") == nil)
        #expect(!fx.exists("photos/b.bin"))
        #expect(fx.partialLength("photos/b.bin") == Int64(body.count))

        let requestsBefore = fx.origin.requests.filter { $0.path == "/b.bin" }.count
        refuse.set(false)
        try await d.resume(id: "photo:b")
        let done = try await d.waitForCompletion(id: "photo:b")
        #expect(done.state == .completed)
        #expect(try Self.localPath(queue, "photo:b") == "photos/b.bin")
        #expect(fx.finalData("photos/b.bin") == body)
        // Resuming asked at most whether the file is whole (a 416), never for its bytes again.
        let after = fx.origin.requests.filter { $0.path == "/b.bin" }.dropFirst(requestsBefore)
        #expect(after.allSatisfy { $0.status == 416 || $0.bodyBytesSent == 0 })
        await d.shutdown()
    }

    /// Killed between the rename and the commit: the next launch finds the whole file in
    /// place and completes it through the hook, with no request. (A small file needs its
    /// expected SHA-256 for that: its record's size and ETag may be another reply's; without
    /// one it is asked for again, `LifecycleTests`.)
    @Test func aFileInPlaceWithoutItsRecordIsCompletedThroughTheHookAtTheNextRun() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let body = try fx.serve("c.bin", size: 100_000)
        let (queue, database) = try Self.appDatabase(fx)
        var record = DownloadRecord(id: "photo:c", remoteUrl: fx.url("c.bin"), localFinalPath: "photos/c.bin", partialPath: "photos/c.bin.partial",
                                    expectedSHA256: Fixture.sha256(body))
        record.state = .downloading
        record.totalBytes = Int64(body.count)
        try await database.save(record)
        try FileManager.default.createDirectory(at: fx.root.appendingPathComponent("photos"), withIntermediateDirectories: true)
        try body.write(to: fx.root.appendingPathComponent("photos/c.bin"))

        let d = Downloader(configuration: fx.configuration(), database: database, transportOrDefault: fx.transport())
        try d.onCompletion(ofIDsWithPrefix: "photo:") { db, record in
            try db.execute(sql: "UPDATE media SET localPath = ? WHERE id = ?", arguments: [record.localFinalPath, record.id])
        }
        try await d.start()
        _ = try await d.waitForCompletion(id: "photo:c")
        #expect(try Self.localPath(queue, "photo:c") == "photos/c.bin")
        #expect(fx.origin.requests.filter { $0.path == "/c.bin" }.isEmpty)
        await d.shutdown()
    }

    @Test func aPrefixHasOneHookAndTheLongestWins() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("d.bin", size: 1000)
        let d = try fx.downloader()
        let ran = LockedBox<[String]>([])
        try d.onCompletion(ofIDsWithPrefix: "") { _, r in ran.mutate { $0.append("any \(r.id)") } }
        try d.onCompletion(ofIDsWithPrefix: "photo:") { _, r in ran.mutate { $0.append("photo \(r.id)") } }
        #expect(await errorCode { try d.onCompletion(ofIDsWithPrefix: "photo:") { _, _ in } } == "E_INVALID_ARGUMENT")
        try await d.fetch(DownloadRequest(id: "photo:d", url: fx.url("d.bin"), destination: "d1.bin"))
        try await d.fetch(DownloadRequest(id: "other", url: fx.url("d.bin"), destination: "d2.bin"))
        #expect(ran.value == ["photo photo:d", "any other"])
        await d.shutdown()
    }
}

/// A value shared with a `@Sendable` hook.
final class LockedBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.lock(); defer { lock.unlock() }; return stored }
    func set(_ value: T) { lock.lock(); stored = value; lock.unlock() }
    func mutate(_ change: (inout T) -> Void) { lock.lock(); change(&stored); lock.unlock() }
}

extension Downloader {
    /// Enqueues and waits, keeping the record (``fetch(_:)`` forgets it).
    func fetchKeepingRecord(_ request: DownloadRequest) async throws {
        try await enqueue(request)
        _ = try await waitForCompletion(id: request.id)
    }
}
