import ArgumentParser
import Courier
import CourierOrigin
import Crypto
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a resumable download end to end, offline: serve a generated file on loopback, download it, interrupt it midway, resume it in a fresh engine, verify its SHA-256.")

    @Option(name: .long, help: "Size of the generated file, in MiB.")
    var sizeMib: Int = 256

    @Option(name: .long, help: "Per-connection speed limit of the origin, MiB/s (0: none), so the progress can be watched.")
    var rateMib: Int = 96

    @Option(name: .long, help: "Interrupt when this fraction of the file has arrived.")
    var interruptAt: Double = 0.5

    @Option(name: .long, help: "Working directory (default: a new temporary one, removed afterwards).")
    var dir: String?

    func validate() throws {
        guard (1...16_384).contains(sizeMib) else { throw ValidationError("--size-mib must be 1 to 16384") }
        guard interruptAt > 0, interruptAt < 1 else { throw ValidationError("--interrupt-at must be between 0 and 1") }
    }

    func run() async throws {
        let base = dir.map { URL(fileURLWithPath: $0) } ?? URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-demo-\(UUID().uuidString.prefix(8))")
        let served = base.appendingPathComponent("served"), root = base.appendingPathComponent("downloads")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(at: base) } }   // a temporary folder: leaving it behind harms nothing

        let size = Int64(sizeMib) << 20
        Terminal.out("1. Generating a \(Format.bytes(size)) file to serve…")
        let expected = try Self.generate(served.appendingPathComponent("demo.bin"), size: size)
        Terminal.out("   SHA-256 \(expected)")

        let origin = try await CourierOrigin.start(directory: served)
        if rateMib > 0 {
            var slow = Fault(); slow.bytesPerSecond = Int64(rateMib) << 20
            origin.setFault(slow, for: "/demo.bin")
        }
        let url = origin.url("/demo.bin")
        Terminal.out("2. Serving it at \(url) (the bundled origin, loopback only)")

        let dbPath = base.appendingPathComponent("courier.sqlite").path
        var config = DownloaderConfiguration(rootDirectory: root)
        config.freeSpaceReserve = 16 << 20
        let request = DownloadRequest(id: "demo", url: url, destination: "demo.bin", sha256: expected)

        // First engine: download until the interrupt point, then quit as a killed app would.
        Terminal.out("3. Downloading; the engine will be stopped at \(Int(interruptAt * 100))%…")
        let first = Downloader(configuration: config, database: try CourierDatabase(path: dbPath), logger: makeLogger(verbose: false))
        try await first.enqueue(request)
        var bar = ProgressRenderer(label: "demo")
        for await event in first.events(for: "demo") {
            guard case let .progress(p) = event else { continue }
            bar.show(p)
            if let f = p.fractionCompleted, f >= interruptAt { break }
        }
        await first.shutdown()
        bar.finish()
        let kept = PartialFile.length(at: root.appendingPathComponent("demo.bin.partial"))
        let stopped = try await CourierDatabase(path: dbPath).record(id: "demo")
        if stopped?.state == .completed {
            // A fast link outran the stop: nothing is left to resume, so nothing to show.
            try await origin.stop()
            let how = rateMib == 0 ? "with a rate limit (--rate-mib 0 left it unthrottled; the default is 96)" : "with a lower --rate-mib or a larger --size-mib"
            Terminal.error("courier: demo: the download finished before the engine could be stopped at \(Int(interruptAt * 100))%, so there is nothing to resume; run it \(how)")
            throw ExitCode(ExitCodes.failure)
        }
        Terminal.out("   Interrupted with \(Format.bytes(kept)) in demo.bin.partial; the record says \(stopped?.state.rawValue ?? "?").")

        // Second engine, as after a relaunch: it finds the record and resumes from the partial.
        origin.clearRequests()
        Terminal.out("4. A fresh engine on the same database resumes it…")
        let second = Downloader(configuration: config, database: try CourierDatabase(path: dbPath), logger: makeLogger(verbose: false))
        let resumed = try await second.start()
        var bar2 = ProgressRenderer(label: "demo")
        var outcome: DownloadRecord?
        var failed: CourierError?
        for await event in second.events(for: "demo") {
            switch event {
            case let .progress(p): bar2.show(p)
            case let .ended(_, end):
                do { outcome = try end.completedRecord(id: "demo") } catch { failed = error as? CourierError ?? CourierError(.unexpected, "\(error)") }
            default: break
            }
        }
        bar2.finish()
        await second.shutdown()
        try await origin.stop()

        guard let outcome, failed == nil else {
            throw failure(failed ?? CourierError(.invalidState, "the resumed download did not finish"))
        }
        let requests = origin.requests
        let fetched = requests.reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        let actual = try Self.sha256(of: root.appendingPathComponent("demo.bin"))
        Terminal.out("   Resumed \(resumed.joined(separator: ", ")) with \(requests.first?.range.map { "Range: \($0)" } ?? "no Range header") → \(requests.first?.status ?? 0); fetched \(Format.bytes(fetched)) more, not \(Format.bytes(size)).")
        Terminal.out("5. Verifying: \(actual)")
        guard actual == expected, outcome.bytesReceived == size, kept > 0, fetched < size else {
            Terminal.error("courier: demo FAILED: the file does not match, or the resume started from zero")
            throw ExitCode(ExitCodes.integrity)
        }
        Terminal.out("OK: \(Format.bytes(size)) downloaded across two engines, resumed at byte \(kept), SHA-256 verified.")
    }

    /// Writes `size` bytes of pseudo-random data and returns their SHA-256.
    static func generate(_ url: URL, size: Int64) throws -> String {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }   // a read-only handle: nothing to lose on close
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        var block = [UInt64](repeating: 0, count: 1 << 17)   // 1 MiB
        for i in block.indices {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            block[i] = state
        }
        var hasher = SHA256()
        var written: Int64 = 0
        var counter: UInt64 = 0
        while written < size {
            counter += 1
            block[0] = counter   // every MiB differs
            let n = Int(min(Int64(1 << 20), size - written))
            let data = block.withUnsafeBytes { Data($0.prefix(n)) }
            hasher.update(data: data)
            try handle.write(contentsOf: data)
            written += Int64(n)
        }
        return SHA256Hex.hex(hasher.finalize())
    }

    static func sha256(of url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }   // a read-only handle: nothing to lose on close
        var hasher = SHA256()
        while let data = try handle.read(upToCount: 4 << 20), !data.isEmpty { hasher.update(data: data) }
        return SHA256Hex.hex(hasher.finalize())
    }
}
