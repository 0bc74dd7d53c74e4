import Courier
import Foundation

/// Draws progress like curl or aria2: a redrawn bar on a terminal, a plain line a second
/// when piped.
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
        let interval: Duration = interactive ? .milliseconds(100) : .seconds(1)
        guard force || now - lastDraw >= interval else { return }
        lastDraw = now
        let percent = p.fractionCompleted.map { String(format: "%5.1f%%", $0 * 100) } ?? "   --%"
        let size = "\(Format.bytes(p.bytesReceived)) / \(p.totalBytes.map(Format.bytes) ?? "?")"
        let speed = "\(Format.bytes(Int64(p.bytesPerSecond)))/s"
        let eta = "ETA \(p.secondsRemaining.map(Format.duration) ?? "--")"
        if interactive {
            let stats = " \(percent)  \(size)  \(speed)  \(eta)"
            let barWidth = max(10, min(40, Terminal.width - stats.count - label.count - 6))
            let filled = Int((p.fractionCompleted ?? 0) * Double(barWidth))
            let bar = String(repeating: "=", count: filled) + (filled < barWidth ? ">" : "") + String(repeating: " ", count: max(0, barWidth - filled - 1))
            Terminal.progress("\r\u{1B}[2K\(label) [\(bar)]\(stats)")
            drewBar = true
        } else {
            Terminal.error("\(label): \(percent.trimmingCharacters(in: .whitespaces)) \(size) \(speed) \(eta)")
        }
    }

    /// Ends the bar's line so the next output starts clean.
    mutating func finish() {
        if interactive, drewBar { Terminal.progress("\n") }
        drewBar = false
    }
}
