import CourierTestSupport
import Foundation
import HTTPTypes
@testable import CourierCore

/// The simulator's server (issue 46): files with versions, answering GETs as an HTTP/1.1
/// origin does (ranges, `If-Range`, strong ETags), with a fault drawn from the seed for each
/// request: a connection cut mid-body, a 503 with `Retry-After`, a stall, a slow head, a
/// `200` to a range, a new version of the file; or, for a hostile file, the same fault forever;
/// and in some worlds a request that fails before any reply (an HTTP/2 stream reset, a
/// refused connection). Its delays are waits on the engine's clock, so they cost no real time.
final class SimulatedServer: @unchecked Sendable { // state under `lock`
    enum Fault: String, CaseIterable, Sendable {
        case none, cut, unavailable, stall, slowHead, ignoresRange, newVersion
        /// Drawn from a stream of their own, in worlds that have them (`quirks`): the server
        /// resets the request's HTTP/2 stream before any reply, or refuses the connection.
        case streamReset, refused

        /// The faults every world draws from, in the order their draws were made first.
        static let drawn: [Fault] = [.cut, .unavailable, .stall, .slowHead, .ignoresRange, .newVersion]
    }

    struct File {
        var versions: [Data]
        /// A server whose fault repeats forever for this file: every reply ignores `Range`
        /// (a `200` with the whole length) and is cut at half the body (issue 45's endless
        /// retry loop: any byte received started the retry count afresh).
        var hostile = false
        var current: Int { versions.count - 1 }
        func etag(_ version: Int) -> String { "\"v\(version)\"" }
    }

    /// One request as the server saw it.
    struct Logged: Sendable {
        let path: String
        let range: String?
        let status: Int
        let fault: Fault
        let at: Duration
    }

    private let lock = NSLock()
    private var rng: SplitMix
    /// The draws of the faults before any reply (nil: a world without them).
    private var quirks: SplitMix?
    private var files: [String: File] = [:]
    private(set) var log: [Logged] = []
    let clock: ManualEngineClock
    private let origin: ContinuousClock.Instant
    /// How often a request meets a fault (0...1).
    let faultRate: Double
    /// How long each 64 KiB part of a body takes (the link's speed).
    let partEvery: Duration
    private let trace: SimulationScenario.Trace

    init(seed: UInt64, clock: ManualEngineClock, faultRate: Double, partEvery: Duration, trace: SimulationScenario.Trace,
         quirks: UInt64? = nil) {
        rng = SplitMix(seed: seed)
        self.quirks = quirks.map { SplitMix(seed: $0) }
        self.clock = clock
        origin = clock.now
        self.faultRate = faultRate
        self.partEvery = partEvery
        self.trace = trace
    }

    private func locked<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }

    /// Serves `size` bytes drawn from the seed at `path` (with the same fault forever when
    /// `hostile`); returns them.
    @discardableResult
    func serve(_ path: String, size: Int, hostile: Bool = false) -> Data {
        locked {
            // Every 8-byte word different (a splice at a wrong offset shows), cheap to make.
            let base = rng.next()
            var words = [UInt64](repeating: 0, count: (size + 7) / 8)
            for i in words.indices { words[i] = base &+ UInt64(i) &* 0x9E37_79B9_7F4A_7C15 }
            let bytes = words.withUnsafeBytes { Data($0.prefix(size)) }
            files[path] = File(versions: [bytes], hostile: hostile)
            return bytes
        }
    }

    /// Every version `path` had, oldest first.
    func versions(_ path: String) -> [Data] { locked { files[path]?.versions ?? [] } }

    /// The version whose ETag is `etag`.
    func version(_ path: String, etag: String?) -> Data? {
        locked {
            guard let file = files[path], let etag else { return nil }
            return file.versions.indices.first { file.etag($0) == etag }.map { file.versions[$0] }
        }
    }

    var elapsed: Duration { clock.now - origin }

    /// What the server does with `request`: the head, and the body's plan.
    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: Data
        /// Bytes sent before the connection is cut (`cut`), or before a long stall (`stall`).
        var cutAfter: Int?
        var stallAfter: Int?
        var headDelay: Duration?
        /// The request fails with this before any reply.
        var failure: CourierError?
    }

    /// `fromSystem`: asked by the system's task for a hand-off (``SimulatedSystem``), not by
    /// the engine (the invariants of order read the engine's requests only).
    func reply(to request: TransportRequest, fromSystem: Bool = false) -> Reply {
        let reply = answer(request)
        let logged = locked { log.last! }
        trace.add("server: \(fromSystem ? "(system) " : "")\(logged.path) \(logged.range ?? "-") \(logged.status) \(logged.fault.rawValue)",
                  fromSystem ? nil : .request(path: logged.path))
        return reply
    }

    private func answer(_ request: TransportRequest) -> Reply {
        locked {
            let path = URL(string: request.url)?.path ?? request.url
            let range = request.headerFields[.range]
            let ifRange = request.headerFields[HTTPField.Name("If-Range")!]
            var fault = Fault.none
            if Double(rng.next() % 10_000) / 10_000 < faultRate {
                fault = Fault.drawn[Int(rng.next() % UInt64(Fault.drawn.count))]
            }
            if fault == .none, var draws = quirks {
                if Double(draws.next() % 10_000) / 10_000 < faultRate / 2 { fault = draws.next() % 3 == 0 ? .refused : .streamReset }
                quirks = draws
            }
            if fault == .streamReset || fault == .refused {
                log.append(Logged(path: path, range: range, status: 0, fault: fault, at: clock.now - origin))
                var reply = Reply(status: 0, headers: [], body: Data())
                reply.failure = fault == .refused ? CourierError(.connectionRefused, "connection refused by the simulated server")
                    : CourierError(.network, "the server closed the HTTP/2 stream (simulated, before its reply)")
                reply.headDelay = fault == .refused ? nil : .milliseconds(Int64(1 + rng.next() % 200))
                return reply
            }
            guard var file = files[path] else {
                log.append(Logged(path: path, range: range, status: 404, fault: .none, at: clock.now - origin))
                return Reply(status: 404, headers: [("Content-Length", "0")], body: Data())
            }
            if file.hostile { fault = .ignoresRange }
            if fault == .newVersion {
                // The file changes on the server: same size, other bytes (a new ETag).
                var next = file.versions[file.current]
                next.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
                    for i in stride(from: 0, to: raw.count, by: 4096) { raw[i] ^= 0xA5 }
                }
                file.versions.append(next)
                files[path] = file
            }
            if fault == .unavailable {
                log.append(Logged(path: path, range: range, status: 503, fault: fault, at: clock.now - origin))
                return Reply(status: 503, headers: [("Retry-After", "\(1 + rng.next() % 5)"), ("Content-Length", "0")], body: Data())
            }
            let whole = file.versions[file.current]
            let etag = file.etag(file.current)
            var status = 200
            var start = 0, end = whole.count - 1
            if let range, fault != .ignoresRange, ifRange == nil || ifRange == etag,
               let (a, b) = Self.parse(range), a < whole.count {
                status = 206
                start = a
                end = min(b ?? whole.count - 1, whole.count - 1)
            }
            let body = whole.isEmpty ? Data() : whole.subdata(in: start..<(end + 1))
            var headers: [(String, String)] = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Length", "\(body.count)")]
            if status == 206 { headers.append(("Content-Range", "bytes \(start)-\(end)/\(whole.count)")) }
            var reply = Reply(status: status, headers: headers, body: body)
            switch fault {
            case .ignoresRange where file.hostile && body.count > 1: reply.cutAfter = body.count / 2
            case .cut where body.count > 1: reply.cutAfter = Int(rng.next() % UInt64(body.count))
            case .stall where body.count > 1: reply.stallAfter = Int(rng.next() % UInt64(body.count))
            case .slowHead: reply.headDelay = .seconds(Int64(1 + rng.next() % 10))
            default: break
            }
            log.append(Logged(path: path, range: range, status: status, fault: fault, at: clock.now - origin))
            return reply
        }
    }

    /// `bytes=a-` or `bytes=a-b`.
    static func parse(_ range: String) -> (Int, Int?)? {
        guard range.hasPrefix("bytes=") else { return nil }
        let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Int(parts[0]) else { return nil }
        if parts[1].isEmpty { return (a, nil) }
        guard let b = Int(parts[1]), b >= a else { return nil }
        return (a, b)
    }
}

/// The engine's transport to the ``SimulatedServer``: the head after the server's delay, the
/// body in 64 KiB parts at the server's pace (10 to 200 ms apart), cut or stalled where it says,
/// all on the engine's clock and the simulator's executor.
struct SimulatedTransport: HTTPTransport {
    let server: SimulatedServer
    /// The process sending (a killed one's requests and bodies never go on), or none.
    var process: SimulatedProcess? = nil

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await process?.haltIfDead()
        let reply = server.reply(to: request)
        let clock: any EngineClock = process.map { ProcessClock(world: server.clock, process: $0) } ?? server.clock
        if let delay = reply.headDelay { try await clock.sleep(for: delay, .simulatedNetwork) }
        if let failure = reply.failure { throw failure }
        var fields = HTTPFields()
        for (name, value) in reply.headers { fields[HTTPField.Name(name)!] = value }
        let (stream, continuation) = AsyncThrowingStream<BodyChunk, any Error>.makeStream()
        let body = reply.body
        let producer = EngineExecutor.current.task {
            var sent = 0, stalled = false
            while sent < body.count {
                do { try await clock.sleep(for: server.partEvery, .simulatedNetwork) } catch { return }
                var n = min(64 << 10, body.count - sent)
                if let cut = reply.cutAfter { n = min(n, cut - sent) }
                if let stall = reply.stallAfter, !stalled { n = min(n, stall - sent) }
                if n > 0 {
                    continuation.yield(BodyChunk(body.subdata(in: sent..<(sent + n))))
                    sent += n
                }
                if let cut = reply.cutAfter, sent >= cut {
                    continuation.finish(throwing: CourierError(.network, "the simulated connection was cut"))
                    return
                }
                if let stall = reply.stallAfter, !stalled, sent == stall {
                    stalled = true
                    // A long silence: the engine's idle window ends it first, unless the
                    // app stops the download before.
                    do { try await clock.sleep(for: .seconds(600), .simulatedNetwork) } catch { return }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in producer.cancel() }
        return TransportResponse(status: reply.status, headerFields: fields, body: TransportBody(stream))
    }

    func shutdown() async throws {}
}
