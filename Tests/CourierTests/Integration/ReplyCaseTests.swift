import CourierAsyncHTTPClient
import Foundation
import Testing
@testable import CourierCore
import CourierOrigin
import CourierTestSupport

/// Every kind of reply a server or CDN gives, against the live origin: the final file's
/// bytes (or its absence) and the record's state are what is checked.
@Suite(.serialized) struct ReplyCaseTests {
    /// Downloads `name` once with a fault on the first request only, then checks the bytes.
    private func downloadThroughFault(_ fault: Fault, size: Int = 3 << 20, file: String = "f.bin",
                                      configure: (inout DownloaderConfiguration) -> Void = { _ in }) async throws -> (DownloadRecord, [OriginRequest], Data, Fixture) {
        let fx = try await Fixture()
        let data = try fx.serve(file, size: size)
        fx.origin.setFault(fault, for: "/" + file)
        let d = try fx.downloader(configure)
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url(file), destination: "out/\(file)"))
        _ = try? await d.waitForCompletion(id: "x")
        let record = try #require(try await d.record(id: "x"))
        await d.shutdown()
        return (record, fx.origin.requests, data, fx)
    }

    /// Starts a download that the origin drops after `dropAfter` bytes, and returns once
    /// the engine is backing off with a non-empty partial: the moment to change the server.
    /// The backoff is on a clock that moves only when `retry` is called, so the retry comes
    /// after the change however late the test makes it (on a 300 ms backoff of the wall
    /// clock, a starved test changed the server after the retry).
    private func interruptedDownload(_ fx: Fixture, size: Int = 3 << 20, dropAfter: Int64 = 1 << 20, seed: UInt64 = 1) async throws -> (d: Downloader, data: Data, retry: @Sendable () -> Void) {
        let data = try fx.serve("f.bin", size: size, seed: seed)
        var drop = Fault(); drop.dropAfterBytes = dropAfter; drop.times = 1
        fx.origin.setFault(drop, for: "/f.bin")
        let clock = ManualEngineClock()
        let d = try fx.downloader { $0.clock = clock; $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(300), maxDelay: .milliseconds(300), maxAttempts: 5) }
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        let backoff = try await clock.nextWait(.backoff)
        #expect(fx.origin.requests.count == 1 && fx.partialLength("f.bin") > 0)
        return (d, data, { clock.advance(to: backoff) })
    }

    @Test func plainDownloadIsWholeAndStrongETagIsStored() async throws {
        let (record, requests, data, fx) = try await downloadThroughFault(Fault())
        defer { Task { await fx.tearDown() } }
        #expect(record.state == .completed)
        #expect(fx.finalData("out/f.bin") == data)
        #expect(!fx.exists("out/f.bin.partial"))
        #expect(record.etag?.hasPrefix("\"") == true)
        #expect(requests.count == 1 && requests[0].acceptEncoding == "identity" && requests[0].range == nil)
    }

    @Test func droppedConnectionResumesWith206AndIfRange() async throws {
        var fault = Fault(); fault.dropAfterBytes = 1 << 20; fault.times = 1
        let (record, requests, data, fx) = try await downloadThroughFault(fault)
        defer { Task { await fx.tearDown() } }
        #expect(record.state == .completed)
        #expect(fx.finalData("out/f.bin") == data)
        #expect(requests.count == 2)
        let resumed = try #require(requests.last)
        #expect(resumed.status == 206)
        let offset = try #require(resumed.range.flatMap { Int64($0.dropFirst(6).dropLast()) })
        #expect(offset > 0 && offset <= 1 << 20)   // resumed from what arrived before the drop, not from zero
        #expect(resumed.ifRange == record.etag)
        #expect(resumed.bodyBytesSent == Int64(data.count) - offset)
    }

    @Test func twoHundredToARangeTruncatesAndNeverAppends() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let (d, data, retry) = try await interruptedDownload(fx)
        // While the engine backs off, make the server ignore ranges.
        var noRange = Fault(); noRange.ignoreRange = true
        fx.origin.setFault(noRange, for: "/f.bin")
        retry()
        let record = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(record.state == .completed && record.totalBytes == Int64(data.count))
        #expect(fx.finalData("f.bin") == data)          // 3 MiB, not 4
        #expect(fx.origin.requests.last?.range != nil && fx.origin.requests.last?.status == 200)
    }

    @Test func rangeNotSatisfiableOnCompletePartialCompletesWithoutBody() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 1 << 20)
        let db = try fx.database()
        // A previous run wrote every byte but died before the rename.
        let first = try fx.downloader()
        try await first.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        _ = try await first.waitForCompletion(id: "x")
        await first.shutdown()
        try FileManager.default.moveItem(at: fx.root.appendingPathComponent("f.bin"), to: fx.root.appendingPathComponent("f.bin.partial"))
        _ = try await db.update(id: "x", ifStateIn: [.completed]) { $0.state = .downloading }
        fx.origin.clearRequests()
        let second = try fx.downloader()
        try await second.resumePendingDownloads()
        let record = try await second.waitForCompletion(id: "x")
        await second.shutdown()
        #expect(record.state == .completed)
        #expect(fx.finalData("f.bin") == data)
        #expect(fx.origin.requests.map(\.status) == [416])
        #expect(fx.finalData("f.bin")?.count == data.count)   // the 416's error page was never appended
    }

    @Test func rangeNotSatisfiableWithOtherLengthRestarts() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let db = try fx.database()
        let data = try fx.serve("f.bin", size: 1 << 20)
        // The partial claims more bytes than the file has now (the file shrank on the server).
        let partial = fx.root.appendingPathComponent("f.bin.partial")
        try Data(repeating: 7, count: (1 << 20) + 500).write(to: partial)
        var rec = DownloadRecord(id: "x", remoteUrl: fx.url("f.bin"), localFinalPath: "f.bin", partialPath: "f.bin.partial")
        rec.totalBytes = (1 << 20) + 500
        rec.state = .downloading
        try await db.save(rec)
        let d = try fx.downloader()
        try await d.resumePendingDownloads()
        let record = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(record.state == .completed)
        #expect(fx.finalData("f.bin") == data)
        #expect(fx.origin.requests.map(\.status) == [416, 200])
    }

    @Test func changedValidatorRestartsAndNeverSplices() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let (d, _, retry) = try await interruptedDownload(fx)
        // A new version of the file appears on the server while we back off.
        let v2 = try fx.serve("f.bin", size: 3 << 20, seed: 2)
        let later = Date().addingTimeInterval(10)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: fx.served.appendingPathComponent("f.bin").path)
        fx.origin.setFault(nil, for: "/f.bin")
        retry()
        let record = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(record.state == .completed)
        #expect(fx.finalData("f.bin") == v2)            // all of v2, nothing of v1
        #expect(fx.origin.requests.last?.status == 200)  // If-Range failed, so the whole file came
    }

    @Test func weakETagIsNeverSentInIfRange() async throws {
        var fault = Fault(); fault.weakETag = true; fault.dropAfterBytes = 1 << 20; fault.times = 1
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 3 << 20)
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        _ = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(fx.finalData("f.bin") == data)
        // The second request resumed using Last-Modified, never the weak tag.
        let resumed = try #require(fx.origin.requests.last)
        #expect(resumed.range != nil)
        #expect(resumed.ifRange.map { !$0.contains("W/") && !$0.hasPrefix("\"") } == true)
    }

    @Test func rangeStartingEarlierThanAskedIsWrittenAtItsOffset() async throws {
        var fault = Fault(); fault.alignRangeStart = 1 << 16
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let (d, data, retry) = try await interruptedDownload(fx, dropAfter: 1_000_003)
        fx.origin.setFault(fault, for: "/f.bin")
        retry()
        _ = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(fx.finalData("f.bin") == data)
        #expect(fx.origin.requests.last?.status == 206)
    }

    @Test func contentRangeStartingLaterOrWithAnotherTotalRestarts() async throws {
        var shifted = Fault(); shifted.contentRangeShift = 4096
        var otherTotal = Fault(); otherTotal.contentRangeTotal = (4 << 20)
        for lie in [shifted, otherTotal] {
            let fx = try await Fixture()
            let (d, data, retry) = try await interruptedDownload(fx, size: 2 << 20)
            var once = lie; once.times = 1
            fx.origin.setFault(once, for: "/f.bin")
            retry()
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            let statuses = fx.origin.requests.map(\.status)
            #expect(statuses.suffix(2) == [206, 200])  // the lying 206 was refused, a full GET followed
            await fx.tearDown()
        }
    }

    @Test func compressedBodyIsDecodedAndRestartedNotResumed() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 1 << 20)
        var fault = Fault(); fault.gzip = true; fault.dropAfterBytes = 300_000; fault.times = 1
        fx.origin.setFault(fault, for: "/f.bin")
        let clock = ManualEngineClock()   // the retry waits for the change below
        let d = try fx.downloader { $0.clock = clock; $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(300), maxDelay: .milliseconds(300), maxAttempts: 5) }
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        let backoff = try await clock.nextWait(.backoff)
        var gz = Fault(); gz.gzip = true
        fx.origin.setFault(gz, for: "/f.bin")
        clock.advance(to: backoff)
        let record = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(record.state == .completed)
        #expect(fx.finalData("f.bin") == data)
        #expect(fx.origin.requests.allSatisfy { $0.range == nil })   // never a range over encoded bytes
    }

    @Test func shortBodyIsRetriedNeverCompleted() async throws {
        var fault = Fault(); fault.contentLengthDelta = 1000; fault.times = 1
        let (record, requests, data, fx) = try await downloadThroughFault(fault, size: 1 << 20)
        defer { Task { await fx.tearDown() } }
        #expect(record.state == .completed)
        #expect(fx.finalData("out/f.bin") == data)
        // The short 200 announced 1000 bytes too many. The resume then met the real size:
        // a 206 with another total, or (when every real byte had arrived) a 416 with another
        // length. Either way the engine restarted instead of splicing or completing short.
        let statuses = requests.map(\.status)
        #expect(statuses.count == 3 && statuses.first == 200 && statuses.last == 200 && [206, 416].contains(statuses[1]), "\(statuses)")
    }

    @Test func shortBodyEveryTimeFailsWithoutAFinalFile() async throws {
        var fault = Fault(); fault.contentLengthDelta = 1000
        let (record, _, _, fx) = try await downloadThroughFault(fault, size: 1 << 20) { $0.retryPolicy.maxAttempts = 3 }
        defer { Task { await fx.tearDown() } }
        #expect(record.state == .failed)
        // The first reply is short; the resumes' 206s then lie too (Content-Length against
        // Content-Range), so the engine gives up on the protocol rather than the length.
        #expect([CourierError.Code.shortBody.rawValue, CourierError.Code.protocolViolation.rawValue].contains(record.lastErrorCode ?? ""))
        #expect(!fx.exists("out/f.bin"))
    }

    /// HTTP/1.1 framing stops at Content-Length, so the extra bytes of a lying server never
    /// reach the body; the file then has the announced size, and only a checksum can tell.
    @Test func longBodyWithChecksumFailsWithoutAFinalFile() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 1 << 20)
        var fault = Fault(); fault.contentLengthDelta = -1000
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", sha256: Fixture.sha256(data)))
        await #expect(throws: CourierError.self) { try await d.waitForCompletion(id: "x") }
        let record = try #require(try await d.record(id: "x"))
        await d.shutdown()
        #expect(record.state == .failed && record.lastErrorCode == CourierError.Code.checksumMismatch.rawValue)
        #expect(!fx.exists("f.bin"))
    }

    /// A transport that does not frame (or a server that overruns) hands the engine more
    /// bytes than announced: the engine cuts at the announced length and fails.
    @Test func longBodyFromTheTransportIsCutAndFailed() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("f.bin", size: 1 << 20)
        let transport = Overfeeding(inner: AsyncHTTPClientTransport())
        let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transport: transport)
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        do { try await d.waitForCompletion(id: "x"); Issue.record("must fail") } catch let e as CourierError {
            #expect(e.code == .bodyTooLong)
        }
        await d.shutdown()
        try await transport.inner.shutdown()
        #expect(!fx.exists("f.bin"))
        #expect(fx.partialLength("f.bin") <= 1 << 20)   // nothing past what was announced
    }

    @Test func noValidatorsStillResumesOnKnownSize() async throws {
        var fault = Fault(); fault.noValidators = true; fault.dropAfterBytes = 1 << 20; fault.times = 1
        let (record, requests, data, fx) = try await downloadThroughFault(fault)
        defer { Task { await fx.tearDown() } }
        #expect(record.state == .completed)
        #expect(fx.finalData("out/f.bin") == data)
        #expect(requests.last?.status == 206 && requests.last?.ifRange == nil)
    }
}

/// Appends a buffer of junk after the real body, as a non-framing transport would.
struct Overfeeding: HTTPTransport {
    let inner: AsyncHTTPClientTransport
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await inner.send(request)
        let body = response.body
        response.body = TransportBody(AsyncThrowingStream<BodyChunk, any Error> { continuation in
            let task = Task {
                do {
                    for try await buffer in body { continuation.yield(buffer) }
                    continuation.yield(BodyChunk([UInt8](repeating: 0xEE, count: 5000)))
                    continuation.finish()
                } catch { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in task.cancel() }
        })
        return response
    }
    func shutdown() async throws {}
}
