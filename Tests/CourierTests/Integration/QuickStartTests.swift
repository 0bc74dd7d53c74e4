import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import Courier

/// The README's quick start, run as written on Linux: the same lines (checked against the
/// README), only the URL replaced, in XDG folders of the test's own.
@Suite(.serialized) struct QuickStartTests {
    /// The README's block, line for line from `let downloader` to the end; `url` is the only
    /// line that differs (the README says to replace it).
    static func quickStart(url: String) async throws {
        // QUICK START BEGIN
        // Records in Application Support, files in Documents (on Linux, the XDG data and download folders).
        let downloader = try await Downloader.standard()
        try await downloader.enqueue(DownloadRequest(id: "manual", url: url, destination: "manual.pdf"))
        for await event in downloader.events(for: "manual") {
            switch event {
            case let .progress(p): print("\(p.bytesReceived) of \(p.totalBytes.map(String.init) ?? "?") bytes")
            case let .ended(_, .completed(record)): print("saved", record.localFinalPath)
            case let .ended(_, .failed(error)): print(error.code, error.message)   // E_NETWORK, E_CHECKSUM_MISMATCH, …
            default: break
            }
        }
        await downloader.shutdown()
        // QUICK START END
    }

    @Test func theReadmesQuickStartDownloadsAFile() async throws {
        // The README's lines are these (but the URL's).
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../README.md"), encoding: .utf8)
        let block = try #require(readme.components(separatedBy: "## Quick start\n\n```swift\n").dropFirst().first?.components(separatedBy: "```").first)
        let ours = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
            .components(separatedBy: "// QUICK START BEGIN\n")[1].components(separatedBy: "        // QUICK START END")[0]
        func lines(_ text: String) -> [String] {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("import ") && !$0.hasPrefix("let url = ") }
        }
        #expect(lines(block) == lines(ours))

        let base = FileManager.default.temporaryDirectory.appendingPathComponent("courier-quickstart-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let served = base.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        let data = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try data.write(to: served.appendingPathComponent("manual.pdf"))
        let origin = try await CourierOrigin.start(directory: served)
        setenv("XDG_DATA_HOME", base.appendingPathComponent("data").path, 1)
        setenv("XDG_DOWNLOAD_DIR", base.appendingPathComponent("Downloads").path, 1)
        defer { unsetenv("XDG_DATA_HOME"); unsetenv("XDG_DOWNLOAD_DIR") }
        try await Self.quickStart(url: origin.url("/manual.pdf"))
        try await origin.stop()
        #expect(try Data(contentsOf: base.appendingPathComponent("Downloads/manual.pdf")) == data)
        #expect(FileManager.default.fileExists(atPath: base.appendingPathComponent("data/courier/courier.sqlite").path))
    }

    @Test func standardPlacesFollowXDG() {
        let linux = StandardPlaces.current(environment: ["HOME": "/home/a", "XDG_DATA_HOME": "/d", "XDG_DOWNLOAD_DIR": "relative/ignored"])
        #if !canImport(Darwin)
        #expect(linux.database.path == "/d/courier/courier.sqlite")
        #expect(linux.root.path == "/home/a/Downloads")
        #expect(StandardPlaces.current(environment: ["HOME": "/home/a"]).database.path == "/home/a/.local/share/courier/courier.sqlite")
        #endif
    }
}
