import Foundation
import Testing

/// `--help` of every command, compared with the reviewed text in HelpSnapshots/: a flag that
/// appears where it does nothing, or a changed meaning, shows up here as a diff to review.
/// After reviewing a deliberate change: COURIER_UPDATE_SNAPSHOTS=1 scripts/test --filter HelpSnapshotTests
@Suite struct HelpSnapshotTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("HelpSnapshots")

    static let commands: [[String]] = [
        [], ["get"], ["put"], ["list"], ["status"], ["pause"], ["resume"], ["cancel"], ["open"], ["demo"], ["serve"],
        ["attachments"], ["attachments", "save"], ["attachments", "sync"], ["attachments", "list"],
        ["doc"], ["doc", "placeholders"], ["doc", "exists"], ["doc", "read"], ["doc", "bytes"], ["doc", "write"], ["doc", "progress"], ["doc", "evict"], ["doc", "status"], ["doc", "sync"],
        ["media"], ["media", "download"], ["media", "open"], ["media", "status"], ["media", "pause"], ["media", "resume"], ["media", "cancel"], ["media", "list"], ["media", "size"], ["media", "clean"], ["media", "remove"], ["media", "migrate"],
    ]

    @Test(arguments: commands)
    func helpMatchesItsSnapshot(command: [String]) async throws {
        let result = try await CLITests.run(command + ["--help"])
        #expect(result.status == 0)
        let name = (["courier"] + command).joined(separator: "-") + ".txt"
        let file = Self.folder.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["COURIER_UPDATE_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(at: Self.folder, withIntermediateDirectories: true)
            try result.stdout.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: file, encoding: .utf8)
        #expect(result.stdout == expected, "courier \(command.joined(separator: " ")) --help changed; review it, then COURIER_UPDATE_SNAPSHOTS=1")
    }
}
