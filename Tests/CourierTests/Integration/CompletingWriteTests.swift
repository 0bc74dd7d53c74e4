import CourierOrigin
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// The completing write that renames the file inside its transaction (an app's completion
/// hook, or a small download over a file already there): nothing of it happens when a stop
/// or a cancel comes first, all of it when it begins first, and a stop never cuts it between
/// the rename and the commit.
@Suite struct CompletingWriteTests {
    /// Over a user's file a small download's partial is named only at its finish (Linux).
    static let namedAtTheFinish = PartialFile.canLink
    /// With a hook; without one (over the user's file) where the rename then runs inside the write.
    static let hookCases = namedAtTheFinish ? [false, true] : [true]

    /// Over a user's file, a finished small download names its partial (the record read then
    /// says it is still this run's), and another process's cancel deletes the record before
    /// the completing write begins, its second deletion of the partial not yet made: the test
    /// plays that deletion itself, so the partial keeps its name. A rename outside the
    /// completing write would put the cancelled download over the user's file here; the
    /// write finds no record and renames nothing, and the stopped run deletes its name.
    @Test(.enabled(if: namedAtTheFinish)) func aRecordDeletedAfterTheFinishedPartialIsNamedNeverReplacesTheUsersFile() async throws {
        try await withFixture { fx in
            try fx.serve("w.bin", size: 200_000)
            let mine = Data("the user's own".utf8)
            try mine.write(to: fx.root.appendingPathComponent("w.bin"))
            let named = AsyncGate()
            defer { named.open() }
            let d = try fx.downloader { $0.afterNaming = { await named.wait() }; $0.progressPersistInterval = .seconds(600) }
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "w") { if let end = e.end { return end } }; return nil }
            try await d.enqueue(DownloadRequest(id: "w", url: fx.url("w.bin"), destination: "w.bin"))
            #expect(try await eventually { fx.exists("w.bin.partial") })   // named at the finish, held there
            #expect(try await fx.database().delete(id: "w"))
            named.open()
            #expect(await ended.value == .cancelled)
            #expect(fx.finalData("w.bin") == mine && !fx.exists("w.bin.partial"))
            await d.shutdown()
        }
    }

    /// A stop in this process (pause, cancel) that lands while the completing write holds the
    /// renamed file, before its commit, does not cut that write: GRDB refuses the commit of a
    /// cancelled task's write, which left the new file in place (over the user's older one,
    /// or beside an app's row rolled back) behind a record that said it was not done. The run
    /// ends completed, the app's row committed with it; a cancel then goes on as for any
    /// completed download (the record goes, the file stays).
    @Test(arguments: ["pause", "cancel"], hookCases)
    func aStopDuringTheCompletingWriteEndsCompleted(_ stop: String, hook: Bool) async throws {
        try await withFixture { fx in
            let data = try fx.serve("c.bin", size: 200_000)
            if !hook { try Data("the user's older version".utf8).write(to: fx.root.appendingPathComponent("c.bin")) }
            let sawStop = Locked<Bool?>(nil)
            let d = try fx.downloader {
                $0.progressPersistInterval = .seconds(600)
                $0.onCompletingWrite = { phase, stopped in   // renamed: the write waits for the stop (30 s at most)
                    guard phase == .renamed else { return }
                    let deadline = Date().addingTimeInterval(30)
                    while !stopped(), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
                    sawStop.withLock { $0 = stopped() }
                }
            }
            if hook { try Self.addAppRow(d, prefix: "c") }
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "c") } }
            try await d.enqueue(DownloadRequest(id: "c", url: fx.url("c.bin"), destination: "c.bin"))
            #expect(try await eventually { fx.finalData("c.bin") == data })
            if stop == "pause" { try await d.pause(id: "c") } else { try await d.cancel(id: "c") }
            #expect(sawStop.withLock { $0 } == true)   // the stop landed inside the write
            let ended = await waiter.value
            #expect(ended == nil, "ended \(String(describing: ended)), not completed")
            #expect(fx.finalData("c.bin") == data && !fx.exists("c.bin.partial"))
            let record = try await fx.database().record(id: "c")
            #expect(stop == "pause" ? record?.state == .completed : record == nil)
            if hook { #expect(try await Self.appRows(fx) == 1) }
            await d.shutdown()
        }
    }

    /// A stop that lands while the completing write still waits for the database (another
    /// write holds it) keeps everything out: once the write begins it finds the run stopped
    /// and renames nothing, so the user's file stays, no app's row is written, and the run
    /// ends paused (its whole partial kept) or cancelled (nothing left).
    @Test(arguments: ["pause", "cancel"], hookCases)
    func aStopWhileTheCompletingWriteWaitsKeepsTheFileOut(_ stop: String, hook: Bool) async throws {
        try await withFixture { fx in
            try fx.serve("k.bin", size: 200_000)
            let mine = Data("the user's older version".utf8)
            if !hook { try mine.write(to: fx.root.appendingPathComponent("k.bin")) }
            // Stalled half way until the writer is held (a body left to flow could complete
            // before the test takes the writer).
            var fault = Fault(); fault.bytesPerSecond = 400_000; fault.stallAfterBytes = 100_000
            fx.origin.setFault(fault, for: "/k.bin")
            // Long leases: no renewal queues behind the held writer.
            let waiting = Locked<(@Sendable () -> Bool)?>(nil)
            let d = try fx.downloader {
                $0.progressPersistInterval = .seconds(600); $0.leaseDuration = .seconds(120); $0.idleTimeout = .seconds(120)
                $0.onCompletingWrite = { phase, stopped in if phase == .waiting { waiting.withLock { $0 = stopped } } }
            }
            if hook { try Self.addAppRow(d, prefix: "k") }
            let ended = try await SmallDownloadTests.startAndAwaitBytes(fx, d, id: "k", file: "k.bin")
            let writer = try await holdWrites(d.database)
            defer { writer.signal() }
            fx.origin.endStalls()
            #expect(try await eventually { waiting.withLock { $0 != nil } })   // the body ended; the completing write waits
            let stopping = Task { if stop == "pause" { try await d.pause(id: "k") } else { try await d.cancel(id: "k") } }
            #expect(try await eventually { waiting.withLock { $0 }?() == true })   // the stop reached the run
            writer.signal()
            try await stopping.value
            #expect(await ended.value == (stop == "pause" ? .paused(nil) : .cancelled))
            #expect(fx.finalData("k.bin") == (hook ? nil : mine))
            let record = try await fx.database().record(id: "k")
            #expect(stop == "pause" ? record?.state == .paused : record == nil)
            if stop == "cancel" { #expect(!fx.exists("k.bin.partial")) }
            if hook { #expect(try await Self.appRows(fx) == 0) }
            await d.shutdown()
        }
    }

    /// An app's hook that writes a row of its own in the completing write.
    static func addAppRow(_ d: Downloader, prefix: String) throws {
        try d.onCompletion(ofIDsWithPrefix: prefix) { db, record in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS appRow (id TEXT)")
            try db.execute(sql: "INSERT INTO appRow VALUES (?)", arguments: [record.id])
        }
    }

    /// The app's rows committed (none when its table was never committed either).
    static func appRows(_ fx: Fixture) async throws -> Int {
        try await fx.database().writer.read { db in
            try db.tableExists("appRow") ? Int.fetchOne(db, sql: "SELECT count(*) FROM appRow") ?? 0 : 0
        }
    }
}
