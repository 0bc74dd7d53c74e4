import CourierOrigin
import Foundation
import Testing
@testable import CourierCore
@_spi(Testing) import CourierURLSession

/// Background hand-off on Linux: URLSession download tasks of the default configuration
/// stand in for the background session (which only Apple's URLSession has). The origin's
/// log, not Courier's counters, says what was fetched.
@Suite(.serialized) struct BackgroundHandOffTests {
    static let size = 8 << 20

    /// A download that hangs at half its bytes (the origin stalls the reply there), so the
    /// hand-off finds it midway however slow the machine is.
    private func startHalfway(_ fx: Fixture, _ d: Downloader) async throws {
        var fault = Fault(); fault.stallAfterBytes = Int64(Self.size / 2); fault.times = 1
        fx.origin.setFault(fault, for: "/f.bin")
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        #expect(try await eventually { fx.partialLength("f.bin") >= 2 << 20 })
    }

    private func transfers(_ d: Downloader, _ fx: Fixture) -> BackgroundTransfers {
        BackgroundTransfers(downloader: d, configuration: BackgroundTransfers.backgroundConfiguration(identifier: "courier.tests"))
    }

    /// A download handed off halfway whose task's reply then hangs (the task is running).
    private func handedOffWithAHangingTask(_ fx: Fixture) async throws -> (Data, Downloader, BackgroundTransfers) {
        let data = try fx.serve("f.bin", size: Self.size)
        let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
        try await startHalfway(fx, d)
        var slow = Fault(); slow.stallAfterBytes = 1; slow.times = 1
        fx.origin.setFault(slow, for: "/f.bin")
        let bt = transfers(d, fx)
        #expect(try await bt.handOff(id: "x"))
        #expect(try await eventually { fx.origin.requests.count == 2 })
        return (data, d, bt)
    }

    /// The kept offset the hand-off asked from, read from the origin's log.
    private func handOffOffset(_ request: OriginRequest?) -> Int64? {
        guard let range = request?.range, range.hasPrefix("bytes="), range.hasSuffix("-") else { return nil }
        return Int64(range.dropFirst(6).dropLast())
    }

    @Test func aDownloadHandedOffHalfwayFinishesThroughADownloadTask() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            let bt = transfers(d, fx)
            let events = d.events(for: "x")
            #expect(try await bt.handOff(id: "x"))
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(Fixture.sha256(fx.finalData("f.bin") ?? Data()) == Fixture.sha256(data))
            // Two requests: the engine's, stopped halfway, and the task's for exactly the rest.
            let requests = fx.origin.requests
            #expect(requests.count == 2)
            let kept = try #require(handOffOffset(requests.last))
            #expect(kept >= 2 << 20 && kept <= Int64(Self.size / 2))
            #expect(requests.last?.status == 206)
            #expect(requests.last?.ifRange != nil)
            #expect(requests.last?.bodyBytesSent == Int64(Self.size) - kept)
            // One stream across the hand-off: it said handedOff, then ended once, completed.
            var seen: [DownloadEvent] = []
            for await event in events { seen.append(event) }
            #expect(seen.contains { if case .stateChanged(_, .handedOff, _) = $0 { return true } else { return false } })
            #expect(seen.filter(\.isFinal).count == 1)
            #expect(seen.last?.end.map { if case .completed = $0 { return true } else { return false } } == true)
            let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: fx.root.appendingPathComponent(".courier-handoff").path)) ?? []
            #expect(leftovers.isEmpty)   // the task's file is deleted once adopted
        }
    }

    @Test func aFileChangedOnTheServerIsNeverSplicedAfterAHandOff() async throws {
        try await withFixture { fx in
            _ = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            let v2 = try changeTheFile(fx)
            let bt = transfers(d, fx)
            #expect(try await bt.handOff(id: "x"))
            _ = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(fx.finalData("f.bin") == v2)                 // all of v2, nothing of v1
            #expect(fx.origin.requests.last?.status == 200)      // If-Range failed: the whole new file came
            #expect(fx.origin.requests.count == 2)               // and it was used: no third request
        }
    }

    @Test func aServerIgnoringIfRangeAfterAChangeRestartsTheDownload() async throws {
        try await withFixture { fx in
            _ = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            let v2 = try changeTheFile(fx)
            var fault = Fault(); fault.ignoreIfRange = true; fault.times = 1
            fx.origin.setFault(fault, for: "/f.bin")
            let bt = transfers(d, fx)
            #expect(try await bt.handOff(id: "x"))
            _ = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(fx.finalData("f.bin") == v2)
            let statuses = fx.origin.requests.map(\.status)
            #expect(statuses.suffix(2) == [206, 200], "\(statuses)")   // the 206 of v2 was refused, the engine restarted
            #expect(fx.origin.requests.last?.range == nil)
        }
    }

    @Test func aKillAfterTheFileArrivedAndBeforeTheSpliceFetchesNothingAgain() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            let bt = transfers(d, fx)
            bt.actsOnEvents = false   // the process "dies" once the task's file is kept
            #expect(try await bt.handOff(id: "x"))
            let stash = fx.root.appendingPathComponent(".courier-handoff")
            #expect(try await eventually { ((try? FileManager.default.contentsOfDirectory(atPath: stash.path)) ?? []).contains { $0.hasSuffix(".head") } })
            bt.invalidate()
            await d.shutdown()
            #expect(try await fx.database().record(id: "x")?.state == .handedOff)
            let fetched = fx.origin.requests.count
            // A half-done splice before the kill: bytes past the kept offset that must not count.
            let partial = fx.root.appendingPathComponent("f.bin.partial")
            let handle = try FileHandle(forWritingTo: partial)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 0xEE, count: 300_000))
            try handle.close()

            // The relaunch: nothing in memory survives; the store and the kept file say it all.
            let d2 = try fx.downloader { $0.idleTimeout = .seconds(120) }
            let bt2 = transfers(d2, fx)
            #expect(try await bt2.recover().isEmpty)
            let record = try await d2.waitForCompletion(id: "x")
            bt2.invalidate()
            await d2.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.count == fetched)   // not one request more
        }
    }

    @Test func aHandOffWhoseTaskIsGoneAtLaunchGoesOnInTheEngine() async throws {
        try await withFixture { fx in
            let (data, d, bt) = try await handedOffWithAHangingTask(fx)
            bt.actsOnEvents = false
            bt.invalidate()                                            // the process dies with its task
            await d.shutdown()
            let d2 = try fx.downloader()
            let bt2 = transfers(d2, fx)
            try await bt2.recover()
            let record = try await d2.waitForCompletion(id: "x")
            await d2.shutdown()
            bt2.invalidate()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.last?.range?.hasPrefix("bytes=") == true)   // resumed from the kept bytes
        }
    }

    @Test func takenBackInTheForegroundTheEngineFinishesAndTheTaskNeverWrites() async throws {
        try await withFixture { fx in
            let (data, d, bt) = try await handedOffWithAHangingTask(fx)
            await bt.takeBack()
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.count == 3)    // the engine's, the task's (cancelled), the engine's again
        }
    }

    @Test func anErrorReplyToTheTaskIsJudgedByTheEnginesRules() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            var unavailable = Fault(); unavailable.failStatus = 503; unavailable.failCount = 1
            fx.origin.setFault(unavailable, for: "/f.bin")
            let bt = transfers(d, fx)
            #expect(try await bt.handOff(id: "x"))
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.map(\.status).contains(503))
            #expect(fx.origin.requests.last?.status == 206)   // the rest, never the 503's page
        }
    }

    @Test func credentialsAreNotHandedToTheSystemUnlessAsked() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            // The engine keeps it: its stalled reply times out after 2 s and the retry finishes.
            let d = Downloader(configuration: fx.configuration { $0.idleTimeout = .seconds(2) }, database: try fx.database(),
                               transportOrDefault: fx.transport(), requestAuthorizer: StaticHeaders([("Authorization", "Bearer secret")]))
            try await startHalfway(fx, d)
            let bt = transfers(d, fx)
            #expect(try await bt.handOff(id: "x") == false)        // stays with the engine
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
            #expect(fx.origin.requests.allSatisfy { $0.authorization == "Bearer secret" })
        }
    }

    @Test func aHandedOffDownloadIsNeitherRequeuedByEnqueueNorLostByPause() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await startHalfway(fx, d)
            var slow = Fault(); slow.stallAfterBytes = 1; slow.times = 1
            fx.origin.setFault(slow, for: "/f.bin")
            let bt = transfers(d, fx)
            bt.actsOnEvents = false
            #expect(try await bt.handOff(id: "x"))
            let kept = fx.partialLength("f.bin")
            // A half-done splice, then an enqueue of the same download: left to the hand-off.
            let handle = try FileHandle(forWritingTo: fx.root.appendingPathComponent("f.bin.partial"))
            try handle.seekToEnd(); try handle.write(contentsOf: Data(repeating: 0xEE, count: 1000)); try handle.close()
            let again = try await d.enqueue(batch: [DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin")])
            #expect(again[0].disposition == .handedOff)
            // A pause ends the hand-off keeping exactly the kept bytes.
            try await d.pause(id: "x")
            #expect(try await d.record(id: "x")?.state == .paused)
            #expect(fx.partialLength("f.bin") == kept)
            bt.invalidate()
            try await d.resume(id: "x")
            _ = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(fx.finalData("f.bin") == data)
        }
    }

    /// A new version of f.bin (same size, other bytes, a later mtime).
    private func changeTheFile(_ fx: Fixture) throws -> Data {
        let v2 = try fx.serve("f.bin", size: Self.size, seed: 2)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(10)],
                                              ofItemAtPath: fx.served.appendingPathComponent("f.bin").path)
        return v2
    }

    /// A hand-off asked for after the session was invalidated (the delegate's retry of a
    /// failed task can meet `invalidate()`; so can an app's call) makes no task — URLSession
    /// traps on one made on an invalidated session, which took the whole test process down —
    /// and leaves the download with the engine, which finishes it.
    @Test func aHandOffAfterTheSessionIsInvalidatedMakesNoTaskAndTheEngineGoesOn() async throws {
        try await withFixture { fx in
            let data = try fx.serve("f.bin", size: Self.size)
            let d = try fx.downloader()
            try await startHalfway(fx, d)
            let bt = transfers(d, fx)
            bt.invalidate()
            #expect(try await bt.handOff(id: "x") == false)
            #expect(try await bt.recover().isEmpty)
            #expect(try await d.record(id: "x")?.state != .handedOff)
            let record = try await d.waitForCompletion(id: "x")
            await d.shutdown()
            #expect(record.state == .completed)
            #expect(fx.finalData("f.bin") == data)
        }
    }
}
