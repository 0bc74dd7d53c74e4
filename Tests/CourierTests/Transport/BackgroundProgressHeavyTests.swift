import CourierOrigin
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import Testing
@testable import CourierCore
@_spi(Testing) import CourierURLSession

/// What a hand-off keeps: the system's progress while the app is away, what it fetched when
/// the app comes back, and an adoption that returns control at once. URLSession download
/// tasks of the default configuration stand in for the background session; the origin's
/// log says what was fetched. Heavy (a 1 GiB adoption, 256 MiB): run alone by scripts/test.
@Suite(.serialized) struct BackgroundProgressHeavyTests {
    private func transfers(_ d: Downloader) -> BackgroundTransfers {
        BackgroundTransfers(downloader: d, configuration: BackgroundTransfers.backgroundConfiguration(identifier: "courier.tests.progress"))
    }

    /// A download whose engine reply stalls after `stall` bytes, handed off once its partial
    /// holds 1 MiB; every reply is paced at `pace` bytes a second.
    private func handedOff(_ fx: Fixture, size: Int, pace: Int64?, _ configure: (inout DownloaderConfiguration) -> Void = { _ in },
                           before: (Downloader) -> Void = { _ in }) async throws -> (Data, Downloader, BackgroundTransfers) {
        let data = try fx.serve("f.bin", size: size)
        var fault = Fault(); fault.stallAfterBytes = 2 << 20; fault.times = 1
        fault.bytesPerSecond = pace
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader { $0.idleTimeout = .seconds(120); configure(&$0) }
        before(d)
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
        #expect(try await eventually { fx.partialLength("f.bin") >= 1 << 20 })
        let bt = transfers(d)
        #expect(try await bt.handOff(id: "x"))
        return (data, d, bt)
    }

    @Test func theSystemsProgressReachesTheEventsAndTheStore() async throws {
        try await withFixture { fx in
            let size = 24 << 20
            let stream = Locked<AsyncStream<DownloadEvent>?>(nil)
            let (data, d, bt) = try await handedOff(fx, size: size, pace: 12 << 20, { $0.progressPersistInterval = .milliseconds(200) },
                                                    before: { d in stream.withLock { $0 = d.events(for: "x") } })
            var stored: [Int64] = []
            for await event in d.events(for: "x") {   // the store, read at each of the system's reports
                if case .ended = event { break }
                guard case .progress = event else { continue }
                guard let record = try await d.record(id: "x"), record.state == .handedOff else { break }
                stored.append(record.bytesReceived)
            }
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed && fx.finalData("f.bin") == data)
            #expect(Set(stored).count >= 3 && stored == stored.sorted(), "\(stored)")   // the store follows the task
            var handedOffAt: Int? = nil, progress: [Int64] = []
            for await event in try #require(stream.withLock { $0 }) {
                if case .stateChanged(_, .handedOff, _) = event { handedOffAt = progress.count }
                if case let .progress(p) = event, handedOffAt != nil { progress.append(p.bytesReceived) }
            }
            // Progress events while handed off, growing, up to the whole file.
            #expect(handedOffAt != nil)
            #expect(progress.count >= 5 && progress == progress.sorted(), "\(progress)")
            #expect(progress.last == Int64(size), "\(progress.suffix(3))")
        }
    }

    /// Taken back at 90 % of 256 MiB, the task is left to finish: afterwards at most the
    /// other 10 % (and 1 MiB) is fetched, and no new request is made.
    @Test func aTakeBackAtNinetyPercentFetchesOnlyTheRest() async throws {
        try await withFixture { fx in
            let size = 256 << 20
            let (data, d, bt) = try await handedOff(fx, size: size, pace: 128 << 20)   // 2 s for the task
            let progress = try #require(try await d.handOffProgress(id: "x"))
            #expect(try await eventually(timeout: .seconds(60)) {
                progress.keptBytes + progress.written.bytes >= Int64(size) * 9 / 10
            })
            let atTakeBack = fx.origin.requests.reduce(Int64(0)) { $0 + $1.bodyBytesSent }
            await bt.takeBack()
            let record = try await d.waitForCompletion(id: "x")
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed && fx.finalData("f.bin") == data)
            let requests = fx.origin.requests
            #expect(requests.count == 2, "\(requests.map { ($0.range, $0.status) })")   // the engine's, the task's: nothing asked again
            let after = requests.reduce(Int64(0)) { $0 + $1.bodyBytesSent } - atTakeBack
            #expect(after <= Int64(size) / 10 + (1 << 20), "fetched \(after) bytes after the take-back")
        }
    }

    /// Adopting a 1 GiB remainder: the system's completion handler (here called by the test
    /// as the session would) is called as soon as the file is kept, not after the splice or
    /// the verification. Reports the figures; asserts only the order of things.
    @Test func adoptingAGigabyteReturnsControlAtOnce() async throws {
        try await withFixture { fx in
            let size: Int64 = (1 << 30) + (2 << 20)
            // A sparse file: the origin reads zeros without a gigabyte written first.
            let served = fx.origin.directory.appendingPathComponent("f.bin")
            #expect(FileManager.default.createFile(atPath: served.path, contents: nil))
            let handle = try FileHandle(forWritingTo: served)
            try handle.truncate(atOffset: UInt64(size))
            try handle.close()
            var fault = Fault(); fault.stallAfterBytes = 2 << 20; fault.times = 1
            fx.origin.setFault(fault, for: "/f.bin")
            let d = try fx.downloader { $0.idleTimeout = .seconds(120) }
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
            #expect(try await eventually { fx.partialLength("f.bin") >= 1 << 20 })
            let bt = transfers(d)
            #expect(try await bt.handOff(id: "x"))
            let stash = fx.root.appendingPathComponent(".courier-handoff")
            #expect(try await eventually(timeout: .seconds(120)) {
                ((try? FileManager.default.contentsOfDirectory(atPath: stash.path)) ?? []).contains { $0.hasSuffix(".head") }
            })
            let arrived = ContinuousClock.now
            let called = Locked<ContinuousClock.Instant?>(nil)
            bt.systemEventsHandler { called.withLock { $0 = .now } }
            bt.urlSessionDidFinishEvents(forBackgroundURLSession: URLSession.shared)
            #expect(try await eventually { called.withLock { $0 } != nil })
            let handler = try #require(called.withLock { $0 }) - arrived
            let record = try await d.waitForCompletion(id: "x")
            let finished = ContinuousClock.now - arrived
            bt.invalidate()
            await d.shutdown()
            #expect(record.state == .completed && record.bytesReceived == size)
            #expect(PartialFile.length(at: fx.root.appendingPathComponent("f.bin")) == size)
            let keep = bt.lastKeepDuration ?? .zero
            print("adopting a 1 GiB remainder: the delegate kept the file in \(keep); the handler was called \(handler) after that; spliced and verified \(finished) after it")
            #expect(handler < finished)   // the handler did not wait for the splice and the verification
        }
    }
}
