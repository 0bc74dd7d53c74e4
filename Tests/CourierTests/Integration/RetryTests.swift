import CourierAsyncHTTPClient
import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

@Suite(.serialized) struct RetryTests {
    // Retry-After is checked on the engine's clock: EngineClockTests.

    @Test func persistentServerErrorFailsAfterMaxAttempts() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 1000)
            var fault = Fault(); fault.failStatus = 500
            fx.origin.setFault(fault, for: "/f.bin")
            let d = try fx.downloader { $0.retryPolicy.maxAttempts = 4 }
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            await #expect(throws: CourierError.self) { try await d.waitForCompletion(id: "x") }
            let record = try #require(try await d.record(id: "x"))
            await d.shutdown()
            #expect(record.state == .failed)
            #expect(record.lastErrorCode == "E_HTTP_5XX")
            #expect(fx.origin.requests.count == 4)
            #expect(!fx.exists("f.bin"))
        }
    }

    @Test func clientErrorFailsAtOnce() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("missing.bin"), destination: "m.bin"))
            do {
                try await d.waitForCompletion(id: "x")
                Issue.record("a 404 must fail")
            } catch let error as CourierError {
                #expect(error.code == .httpClientError)
                #expect(error.message.contains("404"))
            }
            await d.shutdown()
            #expect(fx.origin.requests.count == 1)
            #expect(try await fx.database().record(id: "x")?.state == .failed)
        }
    }

    /// The interleaving that made `clientErrorFailsAtOnce` ask twice, once, in a loaded pass:
    /// the whole process paused longer than the fixture's 5 s idle window before the 404's
    /// head was read, the watchdog aborted the attempt and the retry asked again. Here the
    /// first head comes 6 s late: one request, because the fixture's downloads have no idle
    /// window unless a test asks for one (``NoIdleEngineClock``). With a window of 4.999 s on
    /// the system's clock it asks twice, and the second, on time, gets the file (checked).
    @Test func aHeadLaterThanTheFixturesIdleWindowIsStillOneRequest() async throws {
        try await withFixture { fx in
            try fx.serve("late.bin", size: 1000)
            var late = Fault(); late.failStatus = 404; late.headerDelaySeconds = 6; late.times = 1
            fx.origin.setFault(late, for: "/late.bin")
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("late.bin"), destination: "late.bin"))
            #expect(await errorCode { _ = try await d.waitForCompletion(id: "x") } == CourierError.Code.httpClientError.rawValue)
            await d.shutdown()
            #expect(fx.origin.requests.count == 1)
        }
    }

    @Test func aRefusedConnectionIsRetriedAFewTimesEachAnnounced() async throws {
        try await withFixture { fx in
            // A port nobody listens on: connection refused every time. It fails the attempt
            // at once (not after the connect timeout), and gives up after maxRefusedAttempts,
            // well before maxAttempts.
            let transport = AsyncHTTPClientTransport(connectTimeout: .seconds(30))
            var config = fx.configuration()
            config.retryPolicy.maxAttempts = 8
            config.retryPolicy.maxRefusedAttempts = 3
            let d = Downloader(configuration: config, database: try fx.database(), transport: transport)
            let events = d.events()
            try await d.enqueue(DownloadRequest(id: "x", url: "http://127.0.0.1:9/nothing", destination: "n.bin"))
            do { try await d.waitForCompletion(id: "x"); Issue.record("must fail") } catch let e as CourierError {
                #expect(e.code == .connectionRefused && e.message.contains("127.0.0.1:9"), "\(e)")
            }
            let record = try #require(try await d.record(id: "x"))
            await d.shutdown()
            try await transport.shutdown()
            #expect(record.attemptCount == 3)
            var retries: [(Int, Int)] = []
            for await e in events { if case let .retrying(_, attempt, limit, error, _) = e, error.code == .connectionRefused { retries.append((attempt, limit)) } }
            #expect(retries.map(\.0) == [1, 2] && retries.allSatisfy { $0.1 == 3 })
        }
    }

    // The idle watchdog's abort and resume is checked on the engine's clock: EngineClockTests.

    /// A transport (or a library under it, as AsyncHTTPClient does when it retires a
    /// connection) that throws `CancellationError` while nobody cancelled the run: a dropped
    /// connection, retried, never a run that ends leaving the download queued with its
    /// waiters waiting. Once before the reply, once in the middle of the body.
    @Test func aRequestTheTransportCancelsByItselfIsRetried() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 1 << 20)
            let transport = SelfCancelling(inner: Fixture.ownAsyncHTTPClientTransport())
            let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transport: transport)
            let events = d.events()
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            try await transport.inner.shutdown()
            #expect(fx.finalData("f.bin") == data)
            #expect(record.attemptCount == 2)
            var retried: [CourierError.Code] = []
            for await e in events { if case let .retrying(_, _, _, error, _) = e { retried.append(error.code) } }
            #expect(retried == [.network, .network])
            // The second request was cut after its first chunk: the third resumed from the partial.
            #expect(fx.origin.requests.last?.status == 206)
        }
    }
}

/// Throws `CancellationError` on its first request, and in the body of its second after
/// the first chunk; the third and later go through untouched.
final class SelfCancelling: HTTPTransport, @unchecked Sendable {
    let inner: AsyncHTTPClientTransport
    private let lock = NSLock()
    private var sent = 0
    init(inner: AsyncHTTPClientTransport) { self.inner = inner }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let n = lock.withLock { sent += 1; return sent }
        if n == 1 { throw CancellationError() }
        var response = try await inner.send(request)
        guard n == 2 else { return response }
        let body = response.body
        response.body = TransportBody(AsyncThrowingStream<BodyChunk, any Error> { continuation in
            let task = Task {
                do {
                    for try await buffer in body { continuation.yield(buffer); break }
                    continuation.finish(throwing: CancellationError())
                } catch { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in task.cancel() }
        })
        return response
    }
    func shutdown() async throws {}
}
