import ArgumentParser
import Courier
import Foundation
import Logging

/// Runs downloads in the foreground: progress on stderr, each retry and its wait shown,
/// Ctrl-C (SIGINT) or SIGTERM pauses them (partial and record kept) and says how to go on.
struct Foreground {
    let downloader: Downloader
    let quiet: Bool
    /// `--json`: standard output holds one JSON document, written when every download ended.
    var json = false

    /// Watches `ids` until each completes, fails, or pauses; returns the exit code.
    /// `labels` names each download for people (its file name by default); `note` may add a
    /// word to a completion line ("already up to date").
    /// `kept`: the bytes each download resumes from, as the command saw them before it started.
    ///
    /// `streams`: each download's events, subscribed to before it was enqueued or resumed
    /// (``subscribe(_:)``). One subscribed to only here can miss what came first: a refused
    /// connection's first retry, said within milliseconds of the enqueue, was lost under load.
    func watch(_ ids: [String], streams: [String: AsyncStream<DownloadEvent>] = [:], labels: [String: String] = [:], kept: [String: Int64] = [:],
               note: @escaping @Sendable (DownloadRecord) -> String? = { _ in nil }) async -> Int32 {
        if let delay = ProcessInfo.processInfo.environment["COURIER_TEST_WATCH_DELAY_MS"].flatMap(Int.init) {   // tests: a watcher that starts late
            try? await Task.sleep(for: .milliseconds(delay))   // a test hook: an interrupted wait only starts the watch sooner
        }
        Interrupts.shared.install()
        let downloader = self.downloader
        Interrupts.shared.onInterrupt { Task { for id in ids { try? await downloader.pause(id: id) } } }   // a download that ended meanwhile needs no pause; its final event says so

        var worst = ExitCodes.success
        await withTaskGroup(of: Int32.self) { group in
            for id in ids {
                let events = streams[id] ?? downloader.events(for: id)
                group.addTask { await watchOne(id, events: events, label: labels[id], kept: kept[id] ?? 0, note: note) }
            }
            for await code in group where code != ExitCodes.success {
                if worst == ExitCodes.success || code == ExitCodes.interrupted { worst = code }
            }
        }
        if json {
            var entries: [DownloadJSON] = []
            for id in ids { entries.append(DownloadJSON(id: id, record: try? await downloader.record(id: id), note: note)) }   // unreadable: reported as no record
            do { try printJSON(DownloadsJSON(ok: worst == ExitCodes.success, downloads: entries)) } catch {
                Terminal.error("courier: E_UNEXPECTED: the JSON could not be encoded: \(error)")
            }
        }
        await downloader.shutdown()
        return worst
    }

    /// Subscribes to `id`'s live events: call it before the download is enqueued or resumed
    /// (a stored end of an earlier run is not replayed; for a download that is already at its
    /// end, pass no stream and ``watch(_:streams:labels:kept:note:)`` reads the stored one).
    static func subscribe(_ id: String, _ downloader: Downloader) -> AsyncStream<DownloadEvent> { downloader.liveEvents(for: id) }

    private func watchOne(_ id: String, events: AsyncStream<DownloadEvent>, label given: String?, kept: Int64,
                          note: @Sendable (DownloadRecord) -> String?) async -> Int32 {
        var label = given ?? id
        if given == nil, let record = try? await downloader.record(id: id) { label = Self.label(for: record) }   // a label only: the id serves when the record cannot be read
        var renderer = ProgressRenderer(label: label)
        var lastProgress: DownloadProgress?
        var held = kept   // the most bytes seen: the kept ones first
        var running = false   // before the run starts, progress is the stored one
        for await event in events {
            switch event {
            case let .progress(p):
                lastProgress = p
                // Kept bytes given up by a run (a server that ignores ranges, or a file that
                // changed): said, even with -q, never silently started over.
                if running, p.bytesReceived == 0, held > 0 {
                    renderer.note("courier: \(label): the server sent the file from its start instead of the rest after \(Format.bytes(held)) "
                                  + "(it does not resume, or the file changed): downloading it again from 0")
                }
                if p.bytesReceived > 0 { held = max(held, p.bytesReceived) } else if running { held = 0 }
                if !quiet { renderer.show(p) }
            case let .retrying(_, attempt, limit, error, delay):
                // Always shown, even with -q: a retry is not progress, it is news.
                renderer.note("courier: \(label): \(error.code.rawValue): \(error.message); retry \(attempt) of \(limit - 1) in \(Format.duration(delay.seconds))")
            case let .ended(_, .completed(record)):
                if !quiet, let p = lastProgress { renderer.show(DownloadProgress(id: id, bytesReceived: record.bytesReceived, totalBytes: record.totalBytes, bytesPerSecond: p.bytesPerSecond, secondsRemaining: 0), force: true) }
                renderer.finish()
                let verified = record.expectedSHA256 != nil ? ", SHA-256 verified" : ""
                let extra = note(record).map { ", " + $0 } ?? ""
                if !json { Terminal.out("/\(record.localFinalPath)  (\(Format.bytes(record.bytesReceived))\(verified)\(extra))") }
                return ExitCodes.success
            case let .ended(_, .failed(error)), let .ended(_, .leftToAnotherProcess(error)):
                renderer.finish()
                Terminal.error("courier: \(label): \(error.code.rawValue): \(error.message)")
                return ExitCodes.code(for: error.code)
            case let .ended(_, .paused(error)):
                renderer.finish()
                let record = try? await downloader.record(id: id)   // for the message only: it says less when the record cannot be read
                // The partial file's real length: the record may lag it by a second.
                let kept = record.map { PartialFile.length(at: URL(fileURLWithPath: "/" + $0.partialPath)) } ?? 0
                let held = "\(Format.bytes(kept))\(record?.totalBytes.map { " of " + Format.bytes($0) } ?? "")"
                if let error {
                    Terminal.error("courier: \(label): paused: \(error.code.rawValue): \(error.message)")
                }
                let how = record.map { Redactor.isRedacted(url: $0.remoteUrl) } == true
                    ? "Run the same command again (its URL's secret is not stored), or `courier resume \(id) --url URL`, to continue."
                    : "Run the same command again, or `courier resume \(id)`, to continue."
                Terminal.error("Paused \(label) at \(held). \(how)")
                return error.map { ExitCodes.code(for: $0.code) } ?? ExitCodes.interrupted
            case .ended(_, .cancelled):
                renderer.finish()
                Terminal.error("courier: \(label) was cancelled")
                return ExitCodes.interrupted
            case .ended(_, .shutDown):
                renderer.finish()
                return Interrupts.shared.isSet ? ExitCodes.interrupted : ExitCodes.failure
            case .stateChanged(_, .downloading, _):
                running = true
            case .stateChanged:
                continue
            }
        }
        return Interrupts.shared.isSet ? ExitCodes.interrupted : ExitCodes.failure
    }

    /// A download as people know it: its file's name.
    static func label(for record: DownloadRecord) -> String {
        let name = URL(fileURLWithPath: "/" + record.localFinalPath).lastPathComponent
        return name.isEmpty ? record.id : name
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// The CLI's logger: warnings and worse on stderr, or everything with --verbose.
func makeLogger(verbose: Bool) -> Logger {
    var logger = Logger(label: "courier") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .debug : .error
    return logger
}

/// `get --json`: what each download became, read from its record once every one ended.
struct DownloadsJSON: Encodable {
    var ok: Bool
    var downloads: [DownloadJSON]
}

struct DownloadJSON: Encodable {
    var id: String
    var ok: Bool
    /// completed, failed, paused, queued, downloading, handedOff, or cancelled (no record left).
    var state: String
    var path: String?
    var bytes: Int64?
    var totalBytes: Int64?
    var sha256Verified: Bool?
    var note: String?
    var code: String?
    var message: String?

    init(id: String, record: DownloadRecord?, note: (DownloadRecord) -> String?) {
        self.id = id
        guard let record else {
            ok = false; state = "cancelled"
            return
        }
        state = record.state.rawValue
        ok = record.state == .completed
        path = "/" + record.localFinalPath
        bytes = record.bytesReceived
        totalBytes = record.totalBytes
        if ok {
            sha256Verified = record.expectedSHA256 != nil
            self.note = note(record)
        } else if let error = record.lastError {
            code = error.code.rawValue
            message = error.message
        }
    }
}
