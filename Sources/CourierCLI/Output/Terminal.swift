import Courier
import Foundation

/// Where the CLI writes: results to stdout, progress and errors to stderr.
enum Terminal {
    /// Whether stderr is a terminal (progress bar) or a pipe/file (plain lines).
    static var isInteractive: Bool { isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb" }

    /// A result line on stdout.
    static func out(_ text: String) {
        raw(Data((text + "\n").utf8))
    }

    /// Bytes on stdout as they are (a document's text or bytes). A reader that went away
    /// (`| head`) ends the process at once, quietly, with 141, as SIGPIPE ends one (Courier
    /// ignores SIGPIPE for its sockets, so the write fails instead); any other failure (a
    /// full disk behind `>`) ends it with its code in words. What was recorded stays, as
    /// after any kill.
    static func raw(_ data: Data) {
        do { try FileHandle.standardOutput.write(contentsOf: data) } catch { endForUnwritableOutput(error) }
    }

    static func error(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data((text + "\n").utf8))   // stderr gone: nowhere left to say anything
    }

    static func progress(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data(text.utf8))   // stderr gone: progress is only shown, never needed
    }

    /// Whether a write failed because its reader closed the pipe (EPIPE).
    private static func isClosedPipe(_ error: any Error) -> Bool {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain, ns.code == Int(EPIPE) { return true }
        if let inner = ns.userInfo[NSUnderlyingErrorKey] as? NSError, inner.domain == NSPOSIXErrorDomain, inner.code == Int(EPIPE) { return true }
        return ns.domain == NSCocoaErrorDomain && ns.code == 512 && "\(ns)".contains("Broken pipe")   // Linux's Foundation names it only in words
    }

    private static func endForUnwritableOutput(_ error: any Error) -> Never {
        if isClosedPipe(error) { _exit(ExitCodes.pipeClosed) }
        let failure = FileErrors.error(error, "write to", URL(fileURLWithPath: "/dev/stdout"), .write)
        Terminal.error("courier: \(failure.code.rawValue): \(failure.message)")
        _exit(ExitCodes.code(for: failure.code))
    }

    /// Columns of the terminal, 80 when unknown.
    static var width: Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 80
    }
}

/// Human-readable sizes and durations.
enum Format {
    static func bytes(_ n: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(n) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func duration(_ seconds: Double) -> String {
        // Past 100 days an estimate says nothing (and a server's absurd total would overflow Int).
        guard seconds.isFinite, seconds >= 0, seconds < 100 * 86_400 else { return "--" }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(String(format: "%02d", s % 60))s" }
        return "\(s / 3600)h\(String(format: "%02d", (s % 3600) / 60))m"
    }
}
