import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// `shutdown()` against the stops and the subscribers around it: a stop the app asked for
/// stands, an end being recorded is recorded (and announced) before it returns, and a
/// stream asked for afterwards ends instead of waiting for events that never come.
@Suite struct ShutdownEndTests {
    /// What `body` returns, or `nil` when it has not returned within 60 s (the test then
    /// fails instead of hanging the suite).
    private static func returns<T: Sendable>(_ body: @escaping @Sendable () async -> T) async throws -> T? {
        let result = Locked<T?>(nil)
        Task { let value = await body(); result.withLock { $0 = value } }
        _ = try await eventually { result.withLock { $0 != nil } }
        return result.withLock { $0 }
    }

    @Test func streamsAskedForAfterShutdownEnd() async throws {
        try await withFixture { fx in
            try fx.serve("done.bin", size: 10_000)
            try fx.serve("q.bin", size: 1 << 20)
            var stall = Fault(); stall.stallAfterBytes = 200_000
            fx.origin.setFault(stall, for: "/q.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await d.fetchKeepingRecord(DownloadRequest(id: "done", url: fx.url("done.bin"), destination: "done.bin"))
            try await d.enqueue(DownloadRequest(id: "q", url: fx.url("q.bin"), destination: "q.bin"))
            #expect(try await eventually { await d.runningIDs == ["q"] })
            await d.shutdown()

            // Left queued by the shutdown: no event will ever come for it here.
            let waited = try await Self.returns { await errorCode { _ = try await d.waitForCompletion(id: "q") } ?? "none" }
            #expect(waited == CourierError.Code.cancelled.rawValue)
            // One that ended before still tells its end.
            let done = try await Self.returns { (try? await d.waitForCompletion(id: "done"))?.state }
            #expect(done == .completed)
            let all = try await Self.returns { for await _ in d.events() {}; return true }
            #expect(all == true)
            #expect(try await fx.database().record(id: "q")?.state == .queued)
        }
    }

    /// A pause whose end is being written when the app shuts down: `shutdown()` returns
    /// after it is written, and the pause's final event reaches the waiter first.
    @Test func shutdownWaitsForAnEndBeingRecorded() async throws {
        try await withFixture { fx in
            try fx.serve("p.bin", size: 1 << 20)
            var stall = Fault(); stall.stallAfterBytes = 200_000
            fx.origin.setFault(stall, for: "/p.bin")
            // No progress writes: on a loaded machine one could start after the writer is held
            // (bytes still arriving up to the stall) and keep the run waiting on it.
            let d = try fx.downloader { $0.idleTimeout = .seconds(120); $0.leaseDuration = .seconds(300); $0.progressPersistInterval = .seconds(600) }
            var events = d.events(for: "p").makeAsyncIterator()
            try await d.enqueue(DownloadRequest(id: "p", url: fx.url("p.bin"), destination: "p.bin"))
            // Bytes arrived: the run is past its claim, waiting for more that do not come.
            while let event = await events.next() {
                if case let .progress(p) = event, p.bytesReceived >= 100_000 { break }
            }
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "p") } }

            let gate = try await holdWrites(d.database)
            defer { gate.signal() }
            let pausing = Task { try await d.pause(id: "p") }
            // The run stops at once (it waits for bytes, not for the database); its end then
            // waits for the writer.
            #expect(try await eventually { await d.runningIDs.isEmpty })
            let returned = Locked(false)
            let shuttingDown = Task { await d.shutdown(); returned.withLock { $0 = true } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!returned.withLock { $0 })
            gate.signal()
            await shuttingDown.value
            try await pausing.value
            #expect(await waiter.value == CourierError.Code.paused.rawValue)
            #expect(try await fx.database().record(id: "p")?.state == .paused)
        }
    }

    /// A pause asked for while the run waits on the database, then a shutdown before the
    /// run has stopped: the download ends paused (what the app asked for), not requeued.
    @Test func aPauseAskedForBeforeShutdownStands() async throws {
        try await withFixture { fx in
            try fx.serve("p.bin", size: 4 << 20)
            var slow = Fault(); slow.bytesPerSecond = 256_000
            fx.origin.setFault(slow, for: "/p.bin")
            let d = try fx.downloader {
                $0.idleTimeout = .seconds(120)
                $0.leaseDuration = .seconds(300)
                $0.progressPersistInterval = .milliseconds(20)
            }
            try await d.enqueue(DownloadRequest(id: "p", url: fx.url("p.bin"), destination: "p.bin"))
            #expect(try await eventually { fx.partialLength("p.bin") >= 100_000 })
            let waiter = Task { await errorCode { _ = try await d.waitForCompletion(id: "p") } }

            let gate = try await holdWrites(d.database)
            defer { gate.signal() }
            // Bytes keep coming: the run's next progress write waits for the writer, and a
            // write waiting its turn does not see the cancel until it runs.
            try await Task.sleep(for: .seconds(1))
            let pausing = Task { try await d.pause(id: "p") }
            try await Task.sleep(for: .milliseconds(100))
            #expect(await d.runningIDs == ["p"])
            let shuttingDown = Task { await d.shutdown() }
            try await Task.sleep(for: .milliseconds(100))
            gate.signal()
            await shuttingDown.value
            try await pausing.value
            #expect(await waiter.value == CourierError.Code.paused.rawValue)
            #expect(try await fx.database().record(id: "p")?.state == .paused)
        }
    }
}
