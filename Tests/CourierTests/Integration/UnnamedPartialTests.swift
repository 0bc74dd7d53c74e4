import CourierOrigin
import Foundation
import Testing
@testable import CourierCore

/// A fresh small download's partial, made without a name (`O_TMPFILE`, Linux) and named when
/// something relies on its bytes: nothing at its path before, exactly the bytes after, and
/// nothing left behind when it is closed unnamed.
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
        defer { try? FileManager.default.removeItem(at: dir) }
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
        try file.materialize()
        try file.materialize()   // once named, again is nothing
        #expect(!file.isUnnamed)
        try Self.write(Data([1, 2, 3]), to: file)   // writing goes on in the named file
        try file.close()
        #expect(try Data(contentsOf: url) == data + Data([1, 2, 3]))
    }

    @Test func closedUnnamedItLeavesNothing() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("y.partial")
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        try Self.write(Data(repeating: 9, count: 5000), to: file)
        try file.close()
        #if os(Linux)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #endif
    }

    /// A name taken while the file was unnamed is replaced: the partial path is the
    /// download's own.
    @Test func aNameTakenMeanwhileIsReplaced() throws {
        let dir = Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("z.partial")
        let file = try PartialFile(unnamedAt: url, bufferSize: 64 << 10)
        try Self.write(Data(repeating: 5, count: 1000), to: file)
        try Data("someone else".utf8).write(to: url)
        try file.materialize()
        try file.close()
        #expect(try Data(contentsOf: url) == Data(repeating: 5, count: 1000))
    }

    /// In the engine: a small download's partial has no name while its bytes flow (Linux);
    /// a pause names it with what arrived, as it kept a named one's, and the download then
    /// completes whole. (Its validators are not recorded before the body, so the resume
    /// starts again from zero, as it did with a named partial: checked.)
    @Test func aSmallDownloadPausedKeepsWhatArrivedUnderThePartialsName() async throws {
        try await withFixture { fx in
            let data = try fx.serve("s.bin", size: 600_000)
            var fault = Fault(); fault.stallAfterBytes = 200_000
            fx.origin.setFault(fault, for: "/s.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let progress = Task { for await e in d.events(for: "s") { if case let .progress(p) = e, p.bytesReceived >= 200_000 { return true } }; return false }
            try await d.enqueue(DownloadRequest(id: "s", url: fx.url("s.bin"), destination: "s.bin"))
            #expect(await progress.value)
            #if os(Linux)
            #expect(!fx.exists("s.bin.partial"))
            #endif
            try await d.pause(id: "s")
            let paused = try #require(try await d.record(id: "s"))
            #expect(paused.state == .paused && paused.bytesReceived == 200_000 && fx.partialLength("s.bin") == 200_000)
            fx.origin.setFault(nil, for: "/s.bin")
            try await d.resume(id: "s")
            _ = try await d.waitForCompletion(id: "s")
            #expect(fx.finalData("s.bin") == data && !fx.exists("s.bin.partial"))
            #expect(fx.origin.requests.count == 2)
            await d.shutdown()
        }
    }
}
