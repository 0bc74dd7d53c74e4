import CourierOrigin
import Foundation
import Testing

/// The progress bar as a person sees it: `courier get` in a real terminal (tmux) of 80 and
/// 60 columns, its screen read while the download runs.
@Suite(.serialized) struct TerminalCLITests {
    static let tmux = ["/usr/bin/tmux", "/usr/local/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs `command` in a detached tmux session `columns` wide and saves its screen every
    /// 150 ms until it prints `EXIT=`; returns the screens in order. All of it happens in one
    /// shell: a tmux server started from a process that Foundation's `Process` launched
    /// died when that process ended (seen here), so the shell lives as long as the session.
    static func screens(of command: String, columns: Int, in folder: URL) async throws -> [String] {
        let script = """
        sock="courier-test-$$"
        tmux -L "$sock" new-session -d -x "$1" -y 15 -s t "$2; echo EXIT=\\$?; sleep 10" </dev/null >/dev/null 2>&1 || exit 1
        i=1000
        while [ $i -lt 1400 ]; do
          tmux -L "$sock" capture-pane -p -t t </dev/null > "$3/screen-$i.txt" 2>/dev/null || break
          grep -q "EXIT=" "$3/screen-$i.txt" && break
          i=$((i + 1)); sleep 0.15
        done
        tmux -L "$sock" kill-server </dev/null >/dev/null 2>&1
        exit 0
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", script, "tmux-watch", String(columns), command, folder.path]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let r = await CLITests.finish(p, out, err)
        #expect(r.status == 0, "\(r.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("screen-") }.sorted()
        return try files.map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }
    }

    @Test(.enabled(if: tmux != nil, "tmux is needed (scripts/test installs it)"), arguments: [80, 60])
    func oneLineRedrawnInPlace(columns: Int) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let name = "a-rather-long-file-name-for-the-bar.bin"
        _ = try w.serve(name, size: 6 << 20)
        var slow = Fault(); slow.bytesPerSecond = 2 << 20   // about 3 s: many redraws
        w.origin.setFault(slow, for: "/" + name)
        let command = "'\(CLITests.binary)' get '\(w.origin.url("/" + name))' -o '\(w.out.appendingPathComponent(name).path)' --db '\(w.db)'"
        let folder = w.base.appendingPathComponent("screens-\(columns)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let screens = try await Self.screens(of: command, columns: columns, in: folder)
        let final = try #require(screens.last)
        #expect(final.contains("EXIT=0"), "\(final)")
        let during = screens.dropLast().filter { $0.contains("%") }
        #expect(during.count >= 3, "the bar was seen while downloading (\(screens.count) screens)")
        for screen in screens {
            let lines = screen.split(separator: "\n", omittingEmptySubsequences: true)
            // One progress line, redrawn in place: never a second one scrolled above it.
            #expect(lines.filter { $0.contains("%") && $0.contains("/") }.count <= 1, "\(screen)")
            #expect(lines.allSatisfy { $0.count <= columns }, "\(screen)")
        }
        // Labelled with the file name (shortened to fit), never the download's hash id.
        #expect(during.contains { $0.contains("a-rather-long") } && !during.contains { $0.contains("get-") })
        // The bar comes last in the renderer's priority (percent, speed, ETA, sizes, bar): in
        // 80 columns this file's line has room for it only before the speed is known
        // (ProgressLineRoomTests); a loaded run whose capture missed those first redraws saw
        // every field and no bar (CI's parallel pass once).
        #expect(columns < 70 || during.contains { $0.contains("[") } || during.allSatisfy { $0.contains("/s") && $0.contains("ETA") && $0.contains(" / ") },
                "a bar fits in 80 columns unless every field before it is there")
    }
}
