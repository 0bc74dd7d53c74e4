import ArgumentParser
import Courier
import Dispatch
import Foundation
import Logging

/// Runs downloads in the foreground: progress on stderr, Ctrl-C (SIGINT) or SIGTERM pauses
/// them (partial and record kept) and says how to go on.
struct Foreground {
    let downloader: Downloader
    let quiet: Bool

    /// Watches `ids` until each completes, fails, or pauses; returns the exit code.
    /// `note` may add a word to a completion line ("already up to date").
    func watch(_ ids: [String], paths: [String: String] = [:], note: @escaping @Sendable (DownloadRecord) -> String? = { _ in nil }) async -> Int32 {
        let interrupted = InterruptFlag()
        let signals = interrupted.onFirstSignal { Task { for id in ids { try? await downloader.pause(id: id) } } }
        defer { signals.forEach { $0.cancel() } }

        var worst = ExitCodes.success
        await withTaskGroup(of: Int32.self) { group in
            for id in ids {
                group.addTask { await watchOne(id, path: paths[id], interrupted: interrupted, note: note) }
            }
            for await code in group where code != ExitCodes.success {
                if worst == ExitCodes.success || code == ExitCodes.interrupted { worst = code }
            }
        }
        await downloader.shutdown()
        return worst
    }

    private func watchOne(_ id: String, path: String?, interrupted: InterruptFlag, note: @Sendable (DownloadRecord) -> String?) async -> Int32 {
        var renderer = ProgressRenderer(label: id.count > 24 ? String(id.prefix(21)) + "..." : id)
        var lastProgress: DownloadProgress?
        for await event in downloader.events(for: id) {
            switch event {
            case let .progress(p):
                lastProgress = p
                if !quiet { renderer.show(p) }
            case let .completed(record):
                if !quiet, let p = lastProgress { renderer.show(DownloadProgress(id: id, bytesReceived: record.bytesReceived, totalBytes: record.totalBytes, bytesPerSecond: p.bytesPerSecond, secondsRemaining: 0), force: true) }
                renderer.finish()
                let shown = "/" + record.localFinalPath
                let verified = record.expectedSHA256 != nil ? ", SHA-256 verified" : ""
                let extra = note(record).map { ", " + $0 } ?? ""
                Terminal.out("\(shown)  (\(Format.bytes(record.bytesReceived))\(verified)\(extra))")
                return ExitCodes.success
            case let .failed(_, error):
                renderer.finish()
                Terminal.error("courier: \(id): \(error.code.rawValue): \(error.message)")
                return ExitCodes.code(for: error.code)
            case let .stateChanged(_, _, error?) where error.code == .leased:
                renderer.finish()
                Terminal.error("courier: \(id): \(error.code.rawValue): \(error.message)")
                return ExitCodes.code(for: error.code)
            case let .stateChanged(_, .paused, error):
                renderer.finish()
                let record = try? await downloader.record(id: id)
                let held = record.map { "\(Format.bytes($0.bytesReceived))\($0.totalBytes.map { " of " + Format.bytes($0) } ?? "")" } ?? "its bytes"
                if let error {
                    Terminal.error("courier: \(id): paused: \(error.code.rawValue): \(error.message)")
                }
                let how = record.map { Redactor.isRedacted(url: $0.remoteUrl) } == true
                    ? "Run the same command again (its URL's secret is not stored), or `courier resume \(id) --url URL`, to continue."
                    : "Run the same command again, or `courier resume \(id)`, to continue."
                Terminal.error("Paused \(id) at \(held). \(how)")
                return error.map { ExitCodes.code(for: $0.code) } ?? ExitCodes.interrupted
            case .cancelled:
                renderer.finish()
                Terminal.error("courier: \(id) was cancelled")
                return ExitCodes.interrupted
            default:
                continue
            }
        }
        return interrupted.isSet ? ExitCodes.interrupted : ExitCodes.failure
    }
}

/// Set once by the first signal.
final class InterruptFlag: @unchecked Sendable { // guarded by lock
    private let lock = NSLock()
    private var value = false
    /// Sets the flag; returns whether this call set it.
    func set() -> Bool { lock.lock(); defer { lock.unlock() }; if value { return false }; value = true; return true }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }

    /// Sets the flag on the first SIGINT or SIGTERM and runs `action` then (once); keep the
    /// returned sources and cancel them when done.
    func onFirstSignal(_ action: @escaping @Sendable () -> Void) -> [DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { if self.set() { action() } }
            source.resume()
            return source
        }
    }
}

/// The CLI's logger: warnings and worse on stderr, or everything with --verbose.
func makeLogger(verbose: Bool) -> Logger {
    var logger = Logger(label: "courier") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .debug : .error
    return logger
}
