import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@_spi(Testing) @testable import CourierCore

/// Timing rules checked on the engine's own clock (issue 46), against the real origin: time
/// moves only when the test moves it, so each test knows what the engine waits for, for how
/// long, and that nothing is sent meanwhile, with no wall-clock window. (The Retry-After
/// test replaces one that measured 1.9 s of wall time and, under load, saw a fourth request
/// when the suite's load starved the 200's body past its idle window.)
@Suite struct EngineClockTests {
    @Test func retryAfterIsWaitedOnTheEnginesClockAndNothingIsSentMeanwhile() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 256 << 10)
            var fault = Fault(); fault.failStatus = 503; fault.failCount = 2; fault.retryAfter = 120
            fx.origin.setFault(fault, for: "/f.bin")
            let clock = ManualEngineClock()
            let d = try fx.downloader { $0.clock = clock }
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            for sent in 1...2 {
                let deadline = try await clock.nextWait(.backoff)
                // The server's two minutes, not the policy's 20–100 ms backoff.
                #expect(deadline - clock.now == .seconds(120))
                #expect(fx.origin.requests.count == sent, "a request went out while the engine waited")
                clock.advance(to: deadline)
            }
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(fx.finalData("f.bin") == data)
            #expect(record.attemptCount == 2)
            #expect(fx.origin.requests.map(\.status) == [503, 503, 200])
            #expect(clock.asked.filter { $0.purpose == .backoff }.map(\.length) == [.seconds(120), .seconds(120)])
        }
    }

    @Test func anAttemptIsAbortedWhenItsIdleWindowPasses() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 256 << 10)
            var fault = Fault(); fault.stallAfterBytes = 0; fault.times = 1   // the head, then no byte
            fx.origin.setFault(fault, for: "/f.bin")
            let clock = ManualEngineClock()
            let started = clock.now
            let d = try fx.downloader { $0.clock = clock; $0.idleTimeout = .seconds(30) }
            let events = d.events(for: "x")
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            // The origin has the request (a window passed before would abort a request it
            // never saw, and the next one would be the stalled one).
            #expect(try await eventually { fx.origin.requests.count == 1 })
            var deadline = try await clock.nextWait(.idleWindow)
            #expect(deadline == started + .seconds(30))
            // Time moves to each deadline the watchdog sets. A second short of it ends no wait
            // of the watchdog's; at it, the attempt is aborted, unless the reply's head came
            // meanwhile (late, on a loaded machine or through nginx): then the window runs
            // from the head, a later deadline.
            var aborted = false
            for _ in 0..<3 where !aborted {
                clock.advance(to: deadline - .seconds(1))
                #expect(clock.waiting(.idleWindow) == [deadline] && clock.waiting(.backoff).isEmpty)
                clock.advance(to: deadline)
                let earlier = deadline
                let next = try await clock.nextWait { $0 == .backoff || ($0 == .idleWindow && $1 > earlier) }
                if next.purpose == .backoff { clock.advance(to: next.deadline); aborted = true } else { deadline = next.deadline }
            }
            #expect(aborted)
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            var retried: [String] = []
            for await event in events { if case let .retrying(_, _, _, error, _) = event { retried.append("\(error.code.rawValue): \(error.message)") } }
            #expect(retried == ["E_TIMEOUT: no data arrived for 30 s; aborting this attempt"])
            #expect(fx.finalData("f.bin") == data)
            #expect(record.attemptCount == 1)
            #expect(fx.origin.requests.count == 2)
        }
    }

    /// A reply that stalls after 1 MiB is aborted once the window passes on the engine's
    /// clock and resumed from the stall point. (On the wall clock, with a 1 s window, the
    /// suite's load could starve the first MiB itself past the window.) The same for a small
    /// file (at most 1 MiB), whose reply's validators are not written before its body: the
    /// aborted attempt records them with the kept bytes (it threw them away, and the retry
    /// fetched the file from zero: "discarding 200000 kept bytes").
    @Test(arguments: [(2 << 20, 1 << 20), (600_000, 200_000)])
    func aStalledAttemptIsAbortedAndResumedFromTheStall(size: Int, stall: Int64) async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: size)
            var fault = Fault(); fault.stallAfterBytes = stall; fault.times = 1
            fx.origin.setFault(fault, for: "/f.bin")
            let clock = ManualEngineClock()
            let transport = PullWatchingTransport(fx.transport() ?? Fixture.ownAsyncHTTPClientTransport())
            defer { Task { try? await transport.shutdown() } }   // the test is over: nothing waits for the client
            let d = Downloader(configuration: fx.configuration { $0.clock = clock; $0.idleTimeout = .seconds(30) }, database: try fx.database(), transport: transport)
            let seen = Locked<Int64>(0), retried = Locked<[String]>([])
            let events = d.events(for: "x")
            let watching = Task {
                for await e in events {
                    if case let .progress(p) = e { seen.withLock { $0 = max($0, p.bytesReceived) } }
                    if case let .retrying(_, _, _, error, _) = e { retried.withLock { $0.append("\(error.code.rawValue): \(error.message)") } }
                }
            }
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            // The origin has sent its MiB and stalls; progress ticks (100 ms of the engine's
            // time each, far inside the window) show when the engine holds all of it.
            // The engine has taken in the MiB when it asks for more (time stands still until
            // then: the idle window cannot pass while the bytes are on their way).
            #expect(await transport.waitForPull(after: stall))
            var tick = try await clock.nextWait(.progressTick)
            while seen.withLock({ $0 }) < stall {   // each tick published before the next one's wait
                clock.advance(to: tick)
                tick = try await clock.nextWait(.progressTick, after: tick)
            }
            #expect(seen.withLock { $0 } == stall)
            clock.advance(by: .seconds(30))
            clock.advance(to: try await clock.nextWait(.backoff))
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            watching.cancel()
            #expect(retried.withLock { $0 } == ["E_TIMEOUT: no data arrived for 30 s; aborting this attempt"])
            #expect(fx.finalData("f.bin") == data)
            #expect(record.attemptCount == 1)
            // The stalled request is still asleep on the origin; the one that finished is the
            // resume from the stall point, not a restart.
            let resumed = try #require(fx.origin.requests.last)
            #expect(resumed.status == 206 && resumed.range == "bytes=\(stall)-")
        }
    }

    /// Finishing (checksum, fsync, rename, the record) is never idle, however long the disk
    /// takes: the watchdog stops once the body is whole (issue 31, point 3: a slow fsync and
    /// rename outlasted the window, the attempt was aborted, and the retries gave up with the
    /// file in place). Here an hour of the engine's time passes inside finishing.
    @Test func finishingIsNeverIdleHoweverLongItTakes() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: 300_000)
            let clock = ManualEngineClock()
            let watching = Locked<[Bool]>([])
            let d = try fx.downloader {
                $0.clock = clock
                $0.idleTimeout = .seconds(1)
                $0.beforeCompleting = {
                    watching.withLock { $0.append(Activity.current?.isWatching ?? true) }   // the watch ended with the body
                    clock.advance(by: .seconds(3600))                                   // 3600 windows pass inside finishing
                }
            }
            try await d.enqueue(DownloadRequest(id: "f", url: fx.url("f.bin"), destination: "f.bin"))
            let record = try await d.waitForCompletion(id: "f")
            await d.shutdown()
            #expect(record.state == .completed && fx.finalData("f.bin") == data)
            #expect(watching.withLock { $0 } == [false], "the idle watch went on into finishing")
            #expect(fx.origin.requests.count == 1, "finishing was aborted and the file fetched again")
        }
    }

    @Test func theManualClockEndsOnlyTheWaitsItsTimePasses() async throws {
        let clock = ManualEngineClock()
        let start = clock.now
        let short = Task { try await clock.sleep(for: .seconds(5), .backoff) }
        let long = Task { try await clock.sleep(for: .seconds(50), .heartbeat) }
        _ = try await clock.nextWait(.backoff)
        _ = try await clock.nextWait(.heartbeat)
        clock.advance(by: .seconds(5))
        try await short.value
        #expect(clock.waiting(.heartbeat) == [start + .seconds(50)])
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        #expect(clock.waiting(.heartbeat).isEmpty)
        #expect(clock.now == start + .seconds(5))
    }
}
