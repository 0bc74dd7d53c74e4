import CourierOrigin
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
            try fx.serve("p.bin", size: 900_000)
            var fault = Fault(); fault.bytesPerSecond = 150_000
            fx.origin.setFault(fault, for: "/p.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120); $0.progressPersistInterval = .seconds(2) }
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "p") { if let end = e.end { return end } }; return nil }
            var events = d.events(for: "p").makeAsyncIterator()
            try await d.enqueue(DownloadRequest(id: "p", url: fx.url("p.bin"), destination: "p.bin"))
            while let event = await events.next() {
                if case let .progress(p) = event, p.bytesReceived > 0 { break }
            }
            #if os(Linux)
            #expect(!fx.exists("p.bin.partial"))
            #endif
            try await other.cancel(id: "p")
            #expect(await ended.value == .cancelled)
            #expect(!fx.exists("p.bin") && !fx.exists("p.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }

    /// The same when the run stops another way first (here a pause in its own process): it
    /// names the partial to keep what arrived, reads the record, finds it gone, and takes
    /// the name back.
    @Test func aCancelElsewhereThenAPauseHereLeavesNoName() async throws {
        try await withFixture { fx in
            let (d, _) = try await SmallDownloadTests.slowSmallDownload(fx)
            let other = try fx.downloader()
            let ended = Task { () -> DownloadEnd? in for await e in d.events(for: "s") { if let end = e.end { return end } }; return nil }
            #if os(Linux)
            #expect(!fx.exists("s.bin.partial"))
            #endif
            try await other.cancel(id: "s")
            try await d.pause(id: "s")
            #expect(await ended.value == .cancelled)   // not paused: nothing is left to pause
            #expect(!fx.exists("s.bin") && !fx.exists("s.bin.partial"))
            #expect(try await fx.database().record(id: "s") == nil)
            await d.shutdown(); await other.shutdown()
        }
    }

    /// Put in place unnamed: linked at the final name where nothing is (no partial name
    /// ever), over an existing file by way of the partial's name and a rename, and not at all
    /// when another run holds the partial's name.
    @Test func anUnnamedPartialIsPlacedByItsDescriptor() throws {
        #if os(Linux)
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let partial = dir.appendingPathComponent("a.bin.partial"), final = dir.appendingPathComponent("a.bin")
        func placing(_ bytes: Data, meanwhile: () throws -> Void = {}) throws -> PartialFile.Placement {
            let file = try PartialFile(unnamedAt: partial, bufferSize: 64 << 10)
            try Self.write(bytes, to: file)
            try meanwhile()
            return try PartialFile.placeStep((partial, final), file)()
        }
        guard case let .new(device, inode) = try placing(Data(repeating: 1, count: 70_000)) else { Issue.record("not placed as new"); return }
        #expect(PartialFile.identity(at: final).map { $0 == (device, inode) } == true)
        #expect(try Data(contentsOf: final) == Data(repeating: 1, count: 70_000) && !FileManager.default.fileExists(atPath: partial.path))
        guard case .replaced = try placing(Data(repeating: 2, count: 5)) else { Issue.record("not placed over the old file"); return }
        #expect(try Data(contentsOf: final) == Data(repeating: 2, count: 5) && !FileManager.default.fileExists(atPath: partial.path))
        guard case .nameTaken = try placing(Data(repeating: 3, count: 5), meanwhile: { try Data("another run's".utf8).write(to: partial) }) else { Issue.record("placed over another run's partial"); return }
        #expect(try Data(contentsOf: final) == Data(repeating: 2, count: 5) && (try Data(contentsOf: partial)) == Data("another run's".utf8))
        #endif
    }

    /// Another process cancels a small download between its file's placement and its
    /// completing write, where the user already had a file at that path: the new version
    /// stays (only a file put where nothing was is taken back; the user's old one is gone
    /// with the replacement either way).
    @Test func aCancelAfterReplacingAUsersFileLeavesTheNewFile() async throws {
        try await withFixture { fx in
            let data = try fx.serve("r.bin", size: 300_000)
            try Data("the user's older version".utf8).write(to: fx.root.appendingPathComponent("r.bin"))
            let d = try fx.downloader { $0.pauseAfterRename = .seconds(4) }
            let other = try fx.downloader()
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "r") } }
            try await d.enqueue(DownloadRequest(id: "r", url: fx.url("r.bin"), destination: "r.bin"))
            #expect(try await eventually { fx.finalData("r.bin") == data })   // in place; the record not yet completed
            try await other.cancel(id: "r")
            #expect(await waiter.value == CourierError.Code.cancelled.rawValue)
            #expect(fx.finalData("r.bin") == data && !fx.exists("r.bin.partial"))
            await d.shutdown(); await other.shutdown()
        }
    }
}
