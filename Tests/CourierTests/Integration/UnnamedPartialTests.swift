import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// A fresh small download's partial, made without a name (`O_TMPFILE`, Linux) and named when
/// something relies on its bytes: nothing at its path before, exactly the bytes after,
/// nothing left behind when it is closed unnamed, and never a name that outlives the
/// download (another process's cancel cannot delete a file without one).
@Suite struct UnnamedPartialTests {
    private static func folder() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-unnamed-\(UUID().uuidString)")
    }

    private static func write(_ data: Data, to file: PartialFile) throws {
        try data.withUnsafeBytes { try file.appendPipelined($0) }
        try file.flush()
    }

    @Test func itHasNoNameUntilMaterializedThenHoldsTheBytes() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let url = dir.appendingPathComponent("sub/x.bin.partial")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("stale bytes of an earlier attempt".utf8).write(to: url)
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        #if os(Linux)
        #expect(file.isUnnamed)
        #endif
        #expect(!FileManager.default.fileExists(atPath: url.path))   // the stale one went; the new one has no name yet
        let data = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try Self.write(data, to: file)
        #if os(Linux)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #endif
        #expect(try file.materialize())
        #expect(try file.materialize())   // once named, again is nothing
        #expect(!file.isUnnamed)
        try Self.write(Data([1, 2, 3]), to: file)   // writing goes on in the named file
        try file.close()
        #expect(try Data(contentsOf: url) == data + Data([1, 2, 3]))
    }

    @Test func closedUnnamedItLeavesNothing() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let url = dir.appendingPathComponent("y.partial")
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        try Self.write(Data(repeating: 9, count: 5000), to: file)
        try file.close()
        #if os(Linux)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #endif
    }

    /// A name taken while the file was unnamed belongs to another run of the download: it
    /// is left alone, and naming says so (the run stops).
    @Test func aNameTakenMeanwhileIsLeftAlone() throws {
        #if os(Linux)
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let url = dir.appendingPathComponent("z.partial")
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        try Self.write(Data(repeating: 5, count: 1000), to: file)
        try Data("another run's".utf8).write(to: url)
        #expect(try file.materialize() == false)
        #expect(file.isUnnamed)
        try file.close()
        #expect(try Data(contentsOf: url) == Data("another run's".utf8))
        #endif
    }

    /// Taking a name back deletes only this file's: a path that names another file keeps it.
    @Test func unnamingTakesBackOnlyItsOwnName() throws {
        #if os(Linux)
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let url = dir.appendingPathComponent("w.partial")
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        try Self.write(Data(repeating: 1, count: 100), to: file)
        #expect(try file.materialize())
        file.unname()
        #expect(!FileManager.default.fileExists(atPath: url.path) && file.isUnnamed)
        try Data("a later run's".utf8).write(to: url)
        file.unname()
        #expect(try Data(contentsOf: url) == Data("a later run's".utf8))
        try file.close()
        #endif
    }

    /// In the engine, another process cancels a small download while its partial has no
    /// name (so it deletes nothing), then the run's first progress write finds the record
    /// gone: the name it had just given is taken back, and nothing is left.
    @Test func aCancelElsewhereBeforeTheFirstProgressWriteLeavesNoName() async throws {
        try await withFixture { fx in
            // The body stalls at 300 kB and the progress write waits for 3 s of a clock the
            // test moves: the cancel comes before that write every time (on the wall clock, a
            // starved test could cancel after it, or after the end).
            try fx.serve("p.bin", size: 900_000)
            var fault = Fault(); fault.bytesPerSecond = 150_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/p.bin")
            let clock = ManualEngineClock()
            let d = try fx.downloader { $0.clock = clock; $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(3) }
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "p") { if let end = e.end { return end } }; return nil }
            try await d.enqueue(DownloadRequest(id: "p", url: fx.url("p.bin"), destination: "p.bin"))
            #expect(try await eventually { fx.origin.requests.first?.bodyBytesSent == 300_000 })
            #if os(Linux)
            #expect(!fx.exists("p.bin.partial"))
            #endif
            try await other.cancel(id: "p")
            clock.advance(by: .seconds(3))
            fx.origin.endStalls()   // the next chunk makes the first progress write
            #expect(await ended.value == .cancelled)
            #expect(!fx.exists("p.bin") && !fx.exists("p.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }

    /// The same when the run stops another way first (here a pause in its own process): it
    /// names the partial to keep what arrived, reads the record, finds it gone, and takes
    /// the name back; the pause says the download is not found.
    @Test func aCancelElsewhereThenAPauseHereLeavesNoName() async throws {
        try await withFixture { fx in
            let (d, _) = try await SmallDownloadTests.slowSmallDownload(fx)
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "s") { if let end = e.end { return end } }; return nil }
            #if os(Linux)
            #expect(!fx.exists("s.bin.partial"))
            #endif
            try await other.cancel(id: "s")
            #expect(await errorCode { try await d.pause(id: "s") } == CourierError.Code.notFound.rawValue)
            #expect(await ended.value == .cancelled)   // not paused: nothing is left to pause
            #expect(!fx.exists("s.bin") && !fx.exists("s.bin.partial"))
            #expect(try await fx.database().record(id: "s") == nil)
            await d.shutdown(); await other.shutdown()
        }
    }

    /// Put in place unnamed: linked at the final name where nothing is (no partial name
    /// ever), with the identity the take-back compares; where something is, nothing is
    /// linked and that file is untouched (the run then names the partial and renames it).
    @Test func anUnnamedPartialIsLinkedAtItsFinalNameOnlyWhereNothingIs() throws {
        #if os(Linux)
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let partial = dir.appendingPathComponent("a.bin.partial"), final = dir.appendingPathComponent("a.bin")
        func linking(_ bytes: Data) throws -> (device: UInt64, inode: UInt64)? {
            let file = try PartialFile(unnamedAt: partial, bufferSize: 64 << 10)
            defer { try? file.close() }   // closes the descriptor; the bytes stay under whatever name they got
            try Self.write(bytes, to: file)
            return try PartialFile.link(file.fd, partial: partial, final: final)
        }
        let placed = try #require(try linking(Data(repeating: 1, count: 70_000)))
        #expect(PartialFile.identity(at: final).map { $0 == placed } == true)
        #expect(try Data(contentsOf: final) == Data(repeating: 1, count: 70_000) && !FileManager.default.fileExists(atPath: partial.path))
        #expect(try linking(Data(repeating: 2, count: 5)) == nil)
        #expect(try Data(contentsOf: final) == Data(repeating: 1, count: 70_000) && !FileManager.default.fileExists(atPath: partial.path))
        #endif
    }

    /// Over a file the user already had, a small download's new version appears together
    /// with its completed record (the rename runs inside the completing write, as for a
    /// completion hook): there is no moment for a cancel elsewhere to find the user's file
    /// replaced and the download not completed. A cancel afterwards goes on as for any
    /// completed download: the record goes, the file stays.
    @Test func overAUsersFileTheNewVersionAppearsWithItsCompletedRecord() async throws {
        try await withFixture { fx in
            let data = try fx.serve("r.bin", size: 300_000)
            try Data("the user's older version".utf8).write(to: fx.root.appendingPathComponent("r.bin"))
            // No progress write (on a loaded machine one could name the partial before the body
            // ends, and a named partial is renamed as before); the pause is not reached here.
            let d = try fx.downloader { $0.pauseAfterRename = .seconds(40); $0.progressPersistInterval = .seconds(600) }
            let other = try fx.downloader()
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "r") } }
            try await d.enqueue(DownloadRequest(id: "r", url: fx.url("r.bin"), destination: "r.bin"))
            #expect(try await eventually { fx.finalData("r.bin") == data })
            // Completed as the rename's transaction commits (a moment after the rename, on a
            // loaded machine a slow one), not after the 40 s pause a rename outside it takes.
            #expect(try await eventually(timeout: .seconds(20)) { try await fx.database().record(id: "r")?.state == .completed })
            try await other.cancel(id: "r")
            let ended = await waiter.value
            #expect(ended == nil, "ended \(String(describing: ended)), not completed")
            #expect(fx.finalData("r.bin") == data && !fx.exists("r.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }

    /// Another process cancels a small download while its bytes flow, where the user has a
    /// file at its final path: the run cannot link there, names the partial, finds the
    /// download gone, takes the name back and stops. The user's file is untouched.
    @Test func aCancelElsewhereMidBodyNeverReplacesTheUsersFile() async throws {
        try await withFixture { fx in
            try fx.serve("u.bin", size: 600_000)
            try Data("the user's own".utf8).write(to: fx.root.appendingPathComponent("u.bin"))
            // Stalled half way until the cancel is made (a body left to flow could end first).
            var fault = Fault(); fault.bytesPerSecond = 400_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/u.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(60) }
            let other = try fx.downloader()
            let ended = try await SmallDownloadTests.startAndAwaitBytes(fx, d, id: "u", file: "u.bin")
            try await other.cancel(id: "u")
            fx.origin.endStalls()
            #expect(await ended.value == .cancelled)
            #expect(fx.finalData("u.bin") == Data("the user's own".utf8) && !fx.exists("u.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }

    /// With an app's completion hook the partial has a name from the start (its transaction
    /// renames a named partial): another process's cancel mid-body deletes it, and nothing is
    /// left, neither the partial nor the final file nor the app's row.
    @Test func withACompletionHookACancelElsewhereMidBodyLeavesNothing() async throws {
        try await withFixture { fx in
            try fx.serve("h.bin", size: 600_000)
            // Stalled half way until the cancel is made (a body left to flow could end first).
            var fault = Fault(); fault.bytesPerSecond = 400_000; fault.stallAfterBytes = 300_000
            fx.origin.setFault(fault, for: "/h.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(60) }
            let hooked = HookCalls()
            try d.onCompletion(ofIDsWithPrefix: "h") { _, _ in hooked.add() }
            let other = try fx.downloader()
            let ended = try await SmallDownloadTests.startAndAwaitBytes(fx, d, id: "h", file: "h.bin")
            #expect(fx.exists("h.bin.partial"))   // named from the start
            try await other.cancel(id: "h")
            fx.origin.endStalls()
            #expect(await ended.value == .cancelled)
            #expect(!fx.exists("h.bin") && !fx.exists("h.bin.partial") && hooked.count == 0)
            await d.shutdown(); await other.shutdown()
        }
    }
}

/// Counts a completion hook's calls (from GRDB's writer).
final class HookCalls: @unchecked Sendable {   // guarded by its lock
    private let lock = NSLock()
    private var calls = 0
    func add() { lock.lock(); calls += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return calls }
}
