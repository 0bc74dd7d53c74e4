import CourierCore
import CourierTestSupport
import Foundation
import Testing

/// Issue 45: `courier get` against servers whose fault repeats forever (``HostileServer``:
/// raw sockets, no HTTP library), over both transports. A fault that never mends ends with
/// its code within the retry budget, counted in requests; one that lets a little through on
/// every attempt finishes with the right file; a server that closes its keep-alive
/// connections without saying so costs no retry at all. Times are printed (`endless:`
/// lines), never asserted.
@Suite(.serialized) struct EndlessFaultCLITests {
    static let maxAttempts = 4

    /// A file of `size` bytes that no two offsets confuse.
    static func bytes(_ size: Int) -> Data {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var words = [UInt64](repeating: 0, count: size / 8 + 1)
        for i in words.indices { state ^= state << 13; state ^= state >> 7; state ^= state << 17; words[i] = state }
        return words.withUnsafeBytes { Data($0.prefix(size)) }
    }

    /// The offset a request's `Range: bytes=N-` asks from (0 without one).
    static func rangeStart(_ head: String) -> Int {
        let line = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("range:") }
        return line.flatMap { Int($0.split(separator: "=").last?.split(separator: "-").first ?? "") } ?? 0
    }

    struct Run {
        var result: CLITests.Result
        var requests: [String]
        var records: [[String: Any]]
        var took: Duration
    }

    /// Runs `courier get` against `script`, then reads the database's records (`courier list --json`).
    static func get(_ w: CLITests.World, _ transport: String, args: [String] = [], _ script: @escaping HostileServer.Script,
                    path: String = "/f.bin") async throws -> Run {
        let server = try HostileServer(script)
        defer { server.stop() }
        let target = w.out.appendingPathComponent("f.bin")
        let started = ContinuousClock.now
        let result = try await CLITests.run(["get", server.url(path), "-o", target.path, "--db", w.db, "--transport", transport,
                                             "--connect-timeout", "2"] + args)
        let took = ContinuousClock.now - started
        let listed = try await CLITests.run(["list", "--json", "--db", w.db])
        let records = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8))) as? [[String: Any]] ?? []
        return Run(result: result, requests: server.requests, records: records, took: took)
    }

    /// A server that ignores `Range`, answers 200 with the whole length and cuts the body at
    /// half, every time: the first attempt kept half, no later one keeps more, so the budget
    /// runs out after `maxAttempts` requests, and what was fetched again is counted.
    ///
    /// Over AsyncHTTPClient a loaded client can keep less than the half the server sent (the
    /// body parts it had read but not handed on when the connection closed are dropped:
    /// RELIABILITY.md, upstream), and the next attempt's gain is then net progress. So the
    /// test checks the rule itself, from the run's log of every failure (its count since net
    /// progress and the bytes held after it), which holds whatever the transport delivered:
    /// the count starts afresh exactly when the bytes held pass the mark by the minimum
    /// progress, and the run gives up when it reaches `maxAttempts`. When every attempt held
    /// the whole half (always over URLSession here; over AsyncHTTPClient unless loaded), that
    /// is exactly `maxAttempts` requests.
    @Test(arguments: ["nio", "urlsession"])
    func aRangeIgnoredAndCutAtHalfForeverGivesUp(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let total = 2 << 20
        let body = Self.bytes(total)
        let run = try await Self.get(w, transport, args: ["--max-attempts", "\(Self.maxAttempts)", "-v"]) { _, _ in
            [.send(Data("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n".utf8)
                   + body.prefix(total / 2)), .close]
        }
        print("endless: range ignored, cut at half, over \(transport): \(run.requests.count) requests in \(run.took); \(run.result.stderr.split(separator: "\n").last ?? "")")
        #expect(run.result.status != 0 && run.result.stderr.contains("E_NETWORK") && run.result.stderr.contains("gave up after \(Self.maxAttempts) attempts without progress"),
                "\(transport): \(run.result.stderr)")
        let failures = Self.failuresLogged(run.result.stderr)
        #expect(run.requests.count == failures.count + 1, "\(transport): \(run.requests.count) requests, \(failures.count) retries logged")
        #expect(Self.countsAsTheBudgetSays(failures, size: Int64(total), maxAttempts: Self.maxAttempts), "\(transport): \(failures)")
        if failures.allSatisfy({ $0.held == Int64(total / 2) }) {
            #expect(run.requests.count == Self.maxAttempts, "\(transport): \(run.requests.count) requests, every attempt held half")
        } else {
            print("endless: \(transport): an attempt kept less than the server sent: \(failures)")
        }
        #expect(transport == "nio" || run.requests.count <= Self.maxAttempts + 2, "\(transport): \(run.result.stderr)")
        let record = try #require(run.records.first, "\(transport): no record")
        #expect(record["state"] as? String == "failed")
        // Every attempt after the first fetched the kept bytes again (at most a half each).
        let discarded = (record["discardedBytes"] as? Int) ?? -1
        #expect(discarded > 0 && discarded <= (run.requests.count - 1) * total / 2,
                "\(transport): \(discarded) bytes discarded over \(run.requests.count) requests: \(run.result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("f.bin").path))
    }

    /// Each retry the run logged (`-v`): its failure count since net progress, and the bytes
    /// held after the attempt.
    static func failuresLogged(_ stderr: String) -> [(count: Int, held: Int64)] {
        stderr.split(separator: "\n").compactMap { line in
            guard line.contains("retrying in"), let open = line.range(of: "(failure ") else { return nil }
            let words = line[open.upperBound...].split(separator: " ")
            guard words.count > 6, let count = Int(words[0]), let held = Int64(words[6]) else { return nil }
            return (count, held)
        }
    }

    /// True when every logged count is the one ``RetryPolicy``'s rule gives for the bytes held
    /// (the count starts afresh when they pass the mark by `minimumProgress`, or reach the
    /// file's end), and the attempt after the last logged one is the `maxAttempts`th.
    static func countsAsTheBudgetSays(_ failures: [(count: Int, held: Int64)], size: Int64, maxAttempts: Int) -> Bool {
        let minimum = RetryPolicy().minimumProgress
        var mark: Int64 = 0, count = 0
        for failure in failures {
            let progressed = failure.held >= mark + max(1, min(minimum, size - mark))
            if progressed { mark = failure.held; count = 0 }
            count += 1
            if failure.count != count { return false }
        }
        return count + 1 == maxAttempts
    }

    /// Headers, then no body byte ever: each attempt ends at the idle timeout, and the
    /// budget ends the download.
    @Test(arguments: ["nio", "urlsession"])
    func headersThenNoBodyForeverGivesUp(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let run = try await Self.get(w, transport, args: ["--max-attempts", "3", "--idle-timeout", "1"]) { _, _ in
            [.text("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nETag: \"v1\"\r\n\r\n"), .pause(15), .close]
        }
        print("endless: headers then no body, over \(transport): \(run.requests.count) requests in \(run.took); \(run.result.stderr.split(separator: "\n").last ?? "")")
        #expect(run.result.status != 0 && run.result.stderr.contains("without progress"), "\(transport): \(run.result.stderr)")
        #expect(run.requests.count == 3, "\(transport): \(run.requests.count) requests")
    }

    /// 503 with `Retry-After: 0`, forever: the server's "at once" is honoured, and the
    /// budget still ends the download.
    @Test(arguments: ["nio", "urlsession"])
    func serviceUnavailableForeverGivesUp(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let run = try await Self.get(w, transport, args: ["--max-attempts", "\(Self.maxAttempts)"]) { _, _ in
            [.text("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"), .close]
        }
        print("endless: 503 Retry-After 0, over \(transport): \(run.requests.count) requests in \(run.took); \(run.result.stderr.split(separator: "\n").last ?? "")")
        #expect(run.result.status != 0 && run.result.stderr.contains("E_HTTP_5XX") && run.result.stderr.contains("without progress"), "\(transport): \(run.result.stderr)")
        #expect(run.requests.count == Self.maxAttempts, "\(transport): \(run.requests.count) requests")
        #expect((run.records.first?["attempts"] as? Int) == Self.maxAttempts, "\(transport): \(run.records)")
    }

    /// Honest ranges, each cut after 128 KiB: every attempt gains 128 KiB, which is net
    /// progress, so the download goes on past any budget and finishes with the right bytes.
    @Test(arguments: ["nio", "urlsession"])
    func honestRangesCutEvery128KiBFinish(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let total = 1_300_000, cut = 128 << 10
        let body = Self.bytes(total)
        let run = try await Self.get(w, transport, args: ["--max-attempts", "2"]) { head, _ in
            let start = Self.rangeStart(head)
            let status = start == 0 ? "200 OK" : "206 Partial Content\r\nContent-Range: bytes \(start)-\(total - 1)/\(total)"
            return [.send(Data("HTTP/1.1 \(status)\r\nContent-Length: \(total - start)\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n".utf8)
                          + body[start..<min(total, start + cut)]), .close]
        }
        print("endless: ranges cut every 128 KiB, over \(transport): \(run.requests.count) requests in \(run.took)")
        #expect(run.result.status == 0, "\(transport): \(run.result.stderr)")
        #expect(FileManager.default.contents(atPath: w.out.appendingPathComponent("f.bin").path) == body, "\(transport): wrong bytes")
        // One request per 128 KiB. Over AsyncHTTPClient an attempt may keep less than the
        // server sent before it closed (its state machine drops body parts it had buffered:
        // RELIABILITY.md, "Faults that repeat forever"), so under load a cut can cost one
        // more request (11 for 10 in a loaded run, 2026-11-28); never over URLSession.
        let least = (total + cut - 1) / cut
        if transport == "nio" {
            #expect((least...least + 3).contains(run.requests.count), "\(transport): \(run.requests.count) requests")
        } else {
            #expect(run.requests.count == least, "\(transport): \(run.requests.count) requests")
        }
    }

    /// A server that closes its side after every reply without `Connection: close` (a
    /// keep-alive timeout of zero): through a chain of five redirects, each request that
    /// meets a connection the server closed is sent again at once on a new one. No retry
    /// is announced, no attempt counted, and the server sees each request once.
    @Test(arguments: ["nio", "urlsession"])
    func aServerClosingAfterEveryReplyCostsNoRetry(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let body = Self.bytes(4096)
        let run = try await Self.get(w, transport, args: ["--max-attempts", "2", "-v"], { head, _ in
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let hop = Int(path.dropFirst(2)) ?? 0   // /r0 … /r4, then the file
            if path.hasPrefix("/r"), hop < 4 {
                return [.text("HTTP/1.1 302 Found\r\nLocation: /r\(hop + 1)\r\nContent-Length: 0\r\n\r\n"), .pause(0.05), .close]
            }
            if path.hasPrefix("/r") {
                return [.text("HTTP/1.1 302 Found\r\nLocation: /f.bin\r\nContent-Length: 0\r\n\r\n"), .pause(0.05), .close]
            }
            return [.send(Data("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nETag: \"v1\"\r\n\r\n".utf8) + body), .pause(0.05), .close]
        }, path: "/r0")
        print("endless: a server closing after every reply, over \(transport): \(run.requests.count) requests in \(run.took)")
        #expect(run.result.status == 0, "\(transport): \(run.result.stderr)")
        #expect(FileManager.default.contents(atPath: w.out.appendingPathComponent("f.bin").path) == body)
        #expect(run.requests.count == 6, "\(transport): \(run.requests.count) requests: \(run.requests.map { $0.split(separator: "\r\n").first ?? "" })")
        #expect(!run.result.stderr.contains("retry"), "\(transport): a retry was announced: \(run.result.stderr)")
    }

    /// A kept connection reset once the next request is on it, before any reply (a server
    /// at its keep-alive timeout): sent again at once on a new connection, no retry
    /// announced. A fresh connection reset the same way is a failure like any other (the
    /// hostile suite's "connection reset" costs one request per attempt).
    @Test(arguments: ["nio", "urlsession"])
    func aKeptConnectionResetBeforeItsReplyIsSentAgainAtOnce(transport: String) async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let body = Self.bytes(4096)
        let run = try await Self.get(w, transport, args: ["--max-attempts", "2", "-v"], { _, index in
            switch index {
            case 0: return [.text("HTTP/1.1 302 Found\r\nLocation: /f.bin\r\nContent-Length: 0\r\n\r\n")]   // the connection stays open
            case 1: return [.reset]   // the next request on it: reset, no reply
            default: return [.send(Data("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body), .close]
            }
        }, path: "/start")
        print("endless: a kept connection reset before its reply, over \(transport): \(run.requests.count) requests in \(run.took)")
        #expect(run.result.status == 0, "\(transport): \(run.result.stderr)")
        #expect(FileManager.default.contents(atPath: w.out.appendingPathComponent("f.bin").path) == body)
        #expect(run.requests.count == 3, "\(transport): \(run.requests.count) requests")
        #expect(!run.result.stderr.contains("retry"), "\(transport): a retry was announced: \(run.result.stderr)")
    }
}
