import ArgumentParser
import Courier
import Dispatch
import Foundation

/// `courier get -i FILE`: every download of an aria2-style list, `-j` at once, connections
/// reused per host, queued in one transaction.
struct ListDownload {
    let inputFile: String
    let directory: String?
    let jobs: Int
    let connections: Int
    let headers: [(name: String, value: String)]
    let quiet: Bool
    let verbose: Bool
    /// `--hand-off-at`: every unfinished entry goes to URLSession download tasks once one holds this much.
    let handOffAt: Int64?
    let holdsArrival: Bool
    let store: StoreOptions
    let engine: EngineOptions

    func run() async throws -> Int32 {
        let text: String
        do {
            // `readToEnd()` throws where `readDataToEndOfFile()` traps (stdin a folder, or closed).
            text = inputFile == "-" ? String(decoding: try FileHandle.standardInput.readToEnd() ?? Data(), as: UTF8.self)
                                    : try String(contentsOfFile: inputFile, encoding: .utf8)
        } catch {
            let name = inputFile == "-" ? "standard input" : "the input file \(inputFile)"
            throw CourierError(.fileNotFound, "cannot read \(name): \(FileErrors.describe(error))")
        }
        let list = try InputList(parsing: text)
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        let base = URL(fileURLWithPath: directory ?? cwd.path, isDirectory: true, relativeTo: cwd).standardizedFileURL
        var requests: [DownloadRequest] = []
        var lineOfPath: [String: Int] = [:]
        for entry in list.entries {
            let absolute = base.appendingPathComponent(entry.relativePath).standardizedFileURL.path
            let relative = try SafePath.validateRelative(String(absolute.dropFirst()))   // the CLI's root is "/"
            if let earlier = lineOfPath[absolute] {
                throw CourierError(.invalidArgument, "lines \(earlier) and \(entry.line) both write \(absolute)")
            }
            lineOfPath[absolute] = entry.line
            requests.append(DownloadRequest(id: Get.defaultID(for: absolute), url: entry.url, destination: relative, sha256: entry.sha256, connections: connections))
        }
        if requests.isEmpty {
            Terminal.out("The list holds no URL.")
            return ExitCodes.success
        }
        var configuration = engine.configuration()
        configuration.maxConcurrentDownloads = max(1, jobs)
        let downloader = Downloader(configuration: configuration, database: try store.open(), transport: try engine.transport(),
                                    requestAuthorizer: headers.isEmpty ? nil : StaticHeaders(headers), logger: makeLogger(verbose: verbose))
        try await engine.registerChaosAppRows(on: downloader)
        let events = downloader.events()   // before enqueuing, so no final event is missed
        try await HandOffs.recover(downloader, store: store)
        let results = try await downloader.enqueue(batch: requests)
        var pending: [String] = []
        var settled = 0
        for (record, disposition) in results {
            switch disposition {
            case .queued, .alreadyRunning: pending.append(record.id)
            case .alreadyComplete:
                settled += 1
                Terminal.out("/\(record.localFinalPath)  (\(Format.bytes(record.bytesReceived)), already complete)")
            case .leasedElsewhere:
                settled += 1
                Terminal.error("courier: \(Foreground.label(for: record)): running in another process; left to it")
            case .handedOff:
                settled += 1
                Terminal.error("courier: \(Foreground.label(for: record)): handed off to a background transfer; left to it")
            }
        }
        let transfers = try handOffAt.map { _ in try HandOffs.transfers(downloader, store: store) }
        if let transfers, let handOffAt { _ = HandOffs.handOff(pending, after: handOffAt, holdsArrival: holdsArrival, transfers) }
        let code = await BatchWatch(downloader: downloader, quiet: quiet).watch(events, pending: PendingDownloads(ids: pending), settled: settled)
        transfers?.invalidate()
        return code
    }
}

/// Follows many downloads through the engine's one event stream: a summary line for
/// progress, a line per finished file on stdout, errors on stderr. SIGINT or SIGTERM stops
/// the engine, leaving every unfinished download resumable by the same command.
struct BatchWatch {
    let downloader: Downloader
    let quiet: Bool

    /// Follows `pending` until each ends; `settled` downloads were done or left to another
    /// process before (counted in the summary).
    func watch(_ events: AsyncStream<DownloadEvent>, pending: PendingDownloads, settled: Int = 0) async -> Int32 {
        var pending = pending
        var done = settled, failed = 0, elsewhere = 0
        var worst = ExitCodes.success
        let total = pending.count + settled
        let interrupted = Interrupts.shared
        let downloader = self.downloader
        interrupted.install()
        interrupted.onInterrupt { Task { await downloader.shutdown() } }
        // Every download that runs here ends with exactly one final event (one another
        // process claimed before its turn included: `.leftToAnotherProcess`). Work queued by
        // count (`resume --all`) may also be claimed by another process before this one
        // reads it: it never runs here, so once the engine is idle the rest is left to others.
        let idleWatch = pending.isCounted ? Task { await downloader.waitUntilIdle(); await downloader.shutdown() } : nil
        defer { idleWatch?.cancel() }

        // Bytes of the downloads under way, and of those that ended: the summary costs the
        // running few, not every download seen.
        var bytes: [String: Int64] = [:]
        var endedBytes: Int64 = 0
        var summary = SummaryLine(total: total)
        func fail(_ id: String, _ error: CourierError, paused: Bool) async {
            _ = pending.remove(id)
            endedBytes += bytes.removeValue(forKey: id) ?? 0
            failed += 1
            Terminal.error("courier: \(await label(id)): \(paused ? "paused: " : "")\(error.code.rawValue): \(error.message)")
            let code = ExitCodes.code(for: error.code)
            if worst == ExitCodes.success { worst = code }
        }
        if !pending.isEmpty {
            for await event in events {
                switch event {
                case let .progress(p):
                    bytes[p.id] = p.bytesReceived
                case let .ended(_, .completed(record)):
                    guard pending.remove(record.id) else { break }
                    done += 1
                    bytes[record.id] = nil
                    endedBytes += record.bytesReceived
                    summary.clear()
                    Terminal.out("/\(record.localFinalPath)  (\(Format.bytes(record.bytesReceived))\(record.expectedSHA256 != nil ? ", SHA-256 verified" : ""))")
                case let .ended(id, .failed(error)):
                    guard pending.contains(id) else { break }
                    summary.clear()
                    await fail(id, error, paused: false)
                case .ended(let id, .leftToAnotherProcess):
                    guard pending.remove(id) else { break }
                    bytes[id] = nil
                    elsewhere += 1
                    summary.clear()
                    Terminal.error("courier: \(await label(id)): running in another process; left to it")
                case let .ended(id, .paused(error)):
                    guard pending.contains(id) else { break }
                    summary.clear()
                    await fail(id, error ?? CourierError(.paused, "paused"), paused: true)
                case let .retrying(id, attempt, limit, error, delay):
                    guard pending.contains(id) else { break }
                    summary.clear()
                    Terminal.error("courier: \(await label(id)): \(error.code.rawValue): \(error.message); retry \(attempt) of \(limit - 1) in \(Format.duration(delay.seconds))")
                case .ended(let id, .cancelled):
                    guard pending.remove(id) else { break }
                    bytes[id] = nil
                    failed += 1
                case .ended(_, .shutDown), .stateChanged:
                    break
                }
                if !quiet { summary.show(done: done, failed: failed, bytes: endedBytes + bytes.values.reduce(0, +)) }
                if pending.isEmpty || interrupted.isSet { break }
            }
        }
        summary.clear()
        await downloader.shutdown()
        let left = interrupted.isSet ? pending.count : 0
        elsewhere += interrupted.isSet ? 0 : pending.count
        Terminal.error("\(done) of \(total) downloaded" + (failed > 0 ? ", \(failed) failed" : "") + (elsewhere > 0 ? ", \(elsewhere) left to another process" : "")
                       + (left > 0 ? ", \(left) stopped (run the same command again to resume them)" : ""))
        if interrupted.isSet, left > 0 { return ExitCodes.interrupted }
        return worst
    }
}

extension BatchWatch {
    /// A download as people know it: its file's name (the id when the record is gone).
    func label(_ id: String) async -> String {
        guard let record = try? await downloader.record(id: id) else { return id }   // a label only: the id serves when the record cannot be read
        return Foreground.label(for: record)
    }
}

/// The downloads a batch waits for: by id (`get -i`), or just how many (`resume --all`,
/// where every download the engine runs is one of them and a queue of any length costs
/// nothing to follow). Each download ends with one final event.
struct PendingDownloads {
    private var ids: Set<String>?
    private(set) var count: Int

    init(ids: [String]) { self.ids = Set(ids); count = self.ids!.count }
    init(count: Int) { ids = nil; self.count = count }

    var isEmpty: Bool { count <= 0 }
    /// Counted, not listed: the ids are not known.
    var isCounted: Bool { ids == nil }
    func contains(_ id: String) -> Bool { ids?.contains(id) ?? true }

    /// Counts `id` as ended; false when it was not pending.
    mutating func remove(_ id: String) -> Bool {
        if ids != nil { guard ids!.remove(id) != nil else { return false } }
        guard count > 0 else { return false }
        count -= 1
        return true
    }
}

/// One redrawn line: files done, bytes, speed.
struct SummaryLine {
    let total: Int
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(10)
    private var drawn = false
    private let interactive = Terminal.isInteractive

    init(total: Int) { self.total = total }

    mutating func show(done: Int, failed: Int, bytes: Int64) {
        let now = ContinuousClock.now
        guard now - lastDraw >= (interactive ? .milliseconds(200) : .seconds(2)) else { return }
        lastDraw = now
        let elapsed = max(0.001, Double((now - started).components.seconds) + Double((now - started).components.attoseconds) / 1e18)
        let text = "[\(done)/\(total) files\(failed > 0 ? ", \(failed) failed" : "")] \(Format.bytes(bytes))  \(Format.bytes(Int64(Double(bytes) / elapsed)))/s"
        if interactive { Terminal.progress("\r\u{1B}[2K" + text); drawn = true } else { Terminal.error(text) }
    }

    mutating func clear() {
        if drawn { Terminal.progress("\r\u{1B}[2K"); drawn = false }
    }
}
