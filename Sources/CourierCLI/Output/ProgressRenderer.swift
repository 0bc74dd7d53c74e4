import Courier
import Foundation

/// Draws progress like curl or aria2: one line redrawn in place on a terminal, never wider
/// than it (so it never scrolls); a plain line every few seconds when piped.
struct ProgressRenderer {
    let label: String
    let interactive: Bool
    private var lastDraw = ContinuousClock.now - .seconds(10)
    private var drewBar = false

    init(label: String, interactive: Bool = Terminal.isInteractive) {
        self.label = label
        self.interactive = interactive
    }

    mutating func show(_ p: DownloadProgress, force: Bool = false) {
        let now = ContinuousClock.now
        let interval: Duration = interactive ? .milliseconds(100) : .seconds(5)
        guard force || now - lastDraw >= interval else { return }
        lastDraw = now
        if interactive {
            Terminal.progress("\r\u{1B}[2K" + ProgressLine.render(label: label, progress: p, width: Terminal.width))
            drewBar = true
        } else {
            Terminal.error(ProgressLine.render(label: label, progress: p, width: 200, bar: false))
        }
    }

    /// Prints a line of its own (a retry, a warning) without breaking the bar.
    mutating func note(_ text: String) {
        if interactive, drewBar { Terminal.progress("\r\u{1B}[2K") }
        Terminal.error(text)
    }

    /// Ends the bar's line so the next output starts clean.
    mutating func finish() {
        if interactive, drewBar { Terminal.progress("\n") }
        drewBar = false
    }
}

/// The text of one progress line, fitted to a width: the label (shortened with "…" when
/// long), then as many of percent, speed, ETA, sizes and bar as fit, in that priority.
enum ProgressLine {
    static func render(label: String, progress p: DownloadProgress, width: Int, bar wantsBar: Bool = true) -> String {
        let limit = max(20, width - 1)   // the last column would wrap on some terminals
        let percent = p.fractionCompleted.map { String(format: "%5.1f%%", $0 * 100) } ?? "   --%"
        let size = "\(Format.bytes(p.bytesReceived)) / \(p.totalBytes.map(Format.bytes) ?? "?")"
        let speed = "\(Format.bytes(Int64(p.bytesPerSecond)))/s"
        let eta = "ETA \(p.secondsRemaining.map(Format.duration) ?? "--")"
        let name = shorten(label, to: min(24, max(8, limit / 3)))

        // Fields by priority; each is kept only if the whole line still fits.
        var keep: Set<String> = []
        func line(_ fields: Set<String>, barWidth: Int = 0) -> String {
            var parts = [name]
            if barWidth > 0 { parts.append(bar(p.fractionCompleted, barWidth)) }
            parts.append(percent)
            if fields.contains("size") { parts.append(size) }
            if fields.contains("speed") { parts.append(speed) }
            if fields.contains("eta") { parts.append(eta) }
            return parts.joined(separator: "  ")
        }
        for field in ["speed", "eta", "size"] where line(keep.union([field])).count <= limit { keep.insert(field) }
        let room = limit - line(keep).count - 2 - 2   // two spaces and the brackets
        if wantsBar, room >= 10 { return line(keep, barWidth: min(40, room)) }
        let plain = line(keep)
        return plain.count <= limit ? plain : String(plain.prefix(limit))
    }

    static func shorten(_ text: String, to length: Int) -> String {
        text.count <= length ? text : String(text.prefix(max(1, length - 1))) + "…"
    }

    static func bar(_ fraction: Double?, _ width: Int) -> String {
        let filled = Int((fraction ?? 0) * Double(width))
        return "[" + String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1)) + "]"
    }
}
