import Dispatch
import Foundation

/// Ctrl-C (SIGINT) and SIGTERM for the whole process. Commands that run downloads install
/// it first thing, so an interrupt at any moment (even during the first request, before a
/// download exists) pauses gracefully instead of killing the process; a second one quits at
/// once with 130.
final class Interrupts: @unchecked Sendable { // state behind `lock`
    static let shared = Interrupts()
    private let lock = NSLock()
    private var count = 0
    private var actions: [@Sendable () -> Void] = []
    private var sources: [DispatchSourceSignal] = []

    /// Starts catching SIGINT and SIGTERM (idempotent).
    func install() {
        lock.lock(); defer { lock.unlock() }
        guard sources.isEmpty else { return }
        sources = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            return source
        }
    }

    /// Whether an interrupt came.
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return count > 0 }

    /// Runs `action` on the first interrupt: now, if it already came.
    func onInterrupt(_ action: @escaping @Sendable () -> Void) {
        lock.lock()
        let already = count > 0
        if !already { actions.append(action) }
        lock.unlock()
        if already { action() }
    }

    private func fire() {
        lock.lock()
        count += 1
        let first = count == 1
        let run = first ? actions : []
        if first { actions = [] }
        lock.unlock()
        if !first {
            Terminal.error("\ncourier: interrupted again; quitting now (partial files are kept)")
            exit(ExitCodes.interrupted)
        }
        for action in run { action() }
    }
}
