import AsyncHTTPClient
import CourierOrigin
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The origin's own HTTP semantics: every other test trusts them.
@Suite(.serialized, .timeLimit(.minutes(2))) struct OriginTests {
    final class World: @unchecked Sendable { // one test at a time
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("origin-\(UUID().uuidString)")
        var origin: CourierOrigin!
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let body = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) })

        init() async throws {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try body.write(to: dir.appendingPathComponent("f.bin"))
            origin = try await CourierOrigin.start(directory: dir)
        }

        func get(_ path: String, method: HTTPMethod = .GET, headers: [(String, String)] = []) async throws -> (HTTPClientResponse, Data) {
            var req = HTTPClientRequest(url: origin.url(path))
            req.method = method
            for (k, v) in headers { req.headers.add(name: k, value: v) }
            // No deadline: AsyncHTTPClient's runs on its event loop, this reader on Swift's
            // pool, and a pass's first seconds have starved every reader of this process for
            // 18 s at once (a fresh-clone CI run, 2026-11-29: a 10 s deadline failed here
            // while dozens of tests that take a millisecond "passed after 18 s"). A hang is
            // caught by the suite's time limit instead.
            let response = try await client.execute(req, deadline: .distantFuture)
            var data = Data()
            for try await buffer in response.body { data.append(contentsOf: buffer.readableBytesView) }
            return (response, data)
        }

        func close() async {
            try? await client.shutdown()
            try? await origin.stop()
            try? FileManager.default.removeItem(at: dir)
        }
    }

    @Test func servesRangesWithStrongValidators() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let (full, data) = try await w.get("/f.bin")
        #expect(full.status == .ok && data == w.body)
        let etag = try #require(full.headers.first(name: "ETag"))
        #expect(etag.hasPrefix("\"") && full.headers.first(name: "Accept-Ranges") == "bytes")
        let lastModified = try #require(full.headers.first(name: "Last-Modified"))

        let (part, partData) = try await w.get("/f.bin", headers: [("Range", "bytes=100-")])
        #expect(part.status == .partialContent)
        #expect(part.headers.first(name: "Content-Range") == "bytes 100-9999/10000")
        #expect(partData == w.body.subdata(in: 100..<10_000))

        let (closed, closedData) = try await w.get("/f.bin", headers: [("Range", "bytes=10-19")])
        #expect(closed.status == .partialContent && closedData == w.body.subdata(in: 10..<20))
        let (suffix, suffixData) = try await w.get("/f.bin", headers: [("Range", "bytes=-5")])
        #expect(suffix.status == .partialContent && suffixData == w.body.suffix(5))

        let (ok, _) = try await w.get("/f.bin", headers: [("Range", "bytes=100-"), ("If-Range", etag)])
        #expect(ok.status == .partialContent)
        let (byDate, _) = try await w.get("/f.bin", headers: [("Range", "bytes=100-"), ("If-Range", lastModified)])
        #expect(byDate.status == .partialContent)
        let (stale, staleData) = try await w.get("/f.bin", headers: [("Range", "bytes=100-"), ("If-Range", "\"other\"")])
        #expect(stale.status == .ok && staleData == w.body)
        let (weak, _) = try await w.get("/f.bin", headers: [("Range", "bytes=100-"), ("If-Range", "W/" + etag)])
        #expect(weak.status == .ok)   // a weak validator never satisfies If-Range

        let (unsatisfiable, _) = try await w.get("/f.bin", headers: [("Range", "bytes=10000-")])
        #expect(unsatisfiable.status == .rangeNotSatisfiable)
        #expect(unsatisfiable.headers.first(name: "Content-Range") == "bytes */10000")

        let (head, headData) = try await w.get("/f.bin", method: .HEAD)
        #expect(head.status == .ok && headData.isEmpty && head.headers.first(name: "Content-Length") == "10000")
        let (missing, _) = try await w.get("/nope")
        #expect(missing.status == .notFound)
        let (traversal, _) = try await w.get("/../../etc/passwd")
        #expect(traversal.status == .notFound)
    }

    @Test func faultsMisbehaveAsAsked() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let (weak, _) = try await w.get("/f.bin?weak=1")
        #expect(weak.headers.first(name: "ETag")?.hasPrefix("W/\"") == true)
        let (noRange, noRangeData) = try await w.get("/f.bin?norange=1", headers: [("Range", "bytes=100-")])
        #expect(noRange.status == .ok && noRangeData == w.body)
        let (bare, _) = try await w.get("/f.bin?novalidators=1")
        #expect(bare.headers.first(name: "ETag") == nil && bare.headers.first(name: "Last-Modified") == nil)

        var busy = Fault(); busy.failStatus = 503; busy.failCount = 2; busy.retryAfter = 7
        w.origin.setFault(busy, for: "/f.bin")
        let (first, _) = try await w.get("/f.bin")
        let (second, _) = try await w.get("/f.bin")
        let (third, _) = try await w.get("/f.bin")
        #expect(first.status == .serviceUnavailable && first.headers.first(name: "Retry-After") == "7")
        #expect(second.status == .serviceUnavailable && third.status == .ok)

        var changing = Fault(); changing.changeETag = true
        w.origin.setFault(changing, for: "/f.bin")
        let (a, _) = try await w.get("/f.bin")
        let (b, _) = try await w.get("/f.bin")
        #expect(a.headers.first(name: "ETag") != b.headers.first(name: "ETag"))

        var aligned = Fault(); aligned.alignRangeStart = 4096
        w.origin.setFault(aligned, for: "/f.bin")
        let (al, alData) = try await w.get("/f.bin", headers: [("Range", "bytes=5000-")])
        #expect(al.headers.first(name: "Content-Range") == "bytes 4096-9999/10000" && alData == w.body.subdata(in: 4096..<10_000))

        var redirect = Fault(); redirect.redirectTo = "/f.bin"; redirect.redirectStatus = 307
        w.origin.setFault(redirect, for: "/old")
        let (moved, _) = try await w.get("/old")
        #expect(moved.status == .temporaryRedirect && moved.headers.first(name: "Location") == "/f.bin")

        w.origin.setFault(nil, for: "/f.bin")
        let (gz, gzData) = try await w.get("/f.bin?gzip=1")
        #expect(gz.headers.first(name: "Content-Encoding") == "gzip")
        #expect(gzData.prefix(2) == Data([0x1F, 0x8B]) && gzData.count > w.body.count)   // stored blocks: valid gzip, not smaller
        #expect(try gunzip(gzData) == w.body)
    }

    /// `endStalls()` lets a reply that began before it go on whether or not it had reached
    /// its stall: here the call comes during the second of header delay, before the stall at
    /// 100 bytes (such a reply stalled later for its whole hour, and this GET timed out).
    @Test func endingStallsCoversARepliesStallStillAhead() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let started = ContinuousClock.now
        let get = Task { try await w.get("/f.bin?headerdelay=1&stall=100&stallsecs=60") }
        #expect(await w.origin.waitForRequests { !$0.isEmpty })   // received; its head waits a second
        w.origin.endStalls()
        let (reply, data) = try await get.value
        #expect(reply.status == .ok && data == w.body)
        #expect(ContinuousClock.now - started < .seconds(50), "the reply stalled its whole minute")
    }

    /// A hostile query is a fault with bounds, not an overflow that takes the server down
    /// (`courier serve` answers whoever reaches its port): each request gets an answer, and
    /// the origin serves the plain file after them.
    @Test func hostileQueriesAreAnsweredNotACrash() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        // Every fault here is active on every request (no `times`); a stall is ended once the
        // request has arrived, since the client waits on the body without a deadline.
        for query in ["=", "=x&&a", "status=-1", "status=99999", "redirect=/f.bin&redirectstatus=-1", "headerdelay=nan", "headerdelay=-3",
                      "stall=10&stallsecs=1e30", "crshift=9223372036854775807", "cldelta=9223372036854775807",
                      "cldelta=-9223372036854775808", "rate=-5", "align=-4096", "retryafter=-1&status=503"] {
            let headers = query.contains("crshift") || query.contains("align") ? [("Range", "bytes=100-199")] : []
            let before = w.origin.requests.count
            let reply = Task { try? await w.get("/f.bin?" + query, headers: headers) }   // a reply cut short by a bounded fault is fine: the server must live
            #expect(await w.origin.waitForRequests { $0.count > before }, "\(query)")
            w.origin.endStalls()
            _ = await reply.value
        }
        let (plain, data) = try await w.get("/f.bin")
        #expect(plain.status == .ok && data == w.body)
    }

    /// Decodes with the system's gzip, so the origin's encoder is checked by an independent decoder.
    func gunzip(_ data: Data) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/gzip")
        p.arguments = ["-dc"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(data)
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return out
    }
}
