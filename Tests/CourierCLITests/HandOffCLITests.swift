import Courier
import CourierTestSupport
import CourierOrigin
import Foundation
import Testing

/// Background hand-off from the shell (`get --hand-off-at`), with a real SIGKILL: the
/// process dies after the download task's file arrived and before it was spliced; the same
/// command again adopts that file and fetches nothing more (the origin's log says so).
@Suite(.serialized) struct HandOffCLITests {
    @Test func aKillBetweenTheTasksFileAndTheSpliceFetchesNothingAgain() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 8 << 20)
        var stall = Fault(); stall.stallAfterBytes = 4 << 20; stall.times = 1   // the engine's reply stops at half
        w.origin.setFault(stall, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let args = ["get", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db, "-q"]
        let (p, out, err) = try CLITests.launch(args + ["--hand-off-at", "2M", "--chaos-hold-arrival"])
        let stash = URL(fileURLWithPath: w.db).deletingLastPathComponent().appendingPathComponent("handoff")
        let arrived = try await eventually(timeout: .seconds(30)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: stash.path)) ?? []).contains { $0.hasSuffix(".head") }
        }
        kill(p.processIdentifier, SIGKILL)
        let first = await CLITests.finish(p, out, err)
        #expect(arrived, "\(first.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
        let requests = w.origin.requests
        #expect(requests.count == 2)   // the engine's, stopped, and the task's for the rest
        let kept = requests.last?.range.flatMap { Int64($0.dropFirst(6).dropLast()) } ?? -1
        #expect(kept > 0 && requests.last?.bodyBytesSent == Int64(data.count) - kept)

        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: target) == data)
        #expect(w.origin.requests.count == 2, "\(w.origin.requests.map { ($0.range, $0.status) })")   // nothing fetched again
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: stash.path)) ?? []).isEmpty)
    }

    @Test func aHandOffFinishesTheDownloadThroughADownloadTask() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 8 << 20)
        var stall = Fault(); stall.stallAfterBytes = 4 << 20; stall.times = 1
        w.origin.setFault(stall, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let run = try await CLITests.run(["get", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db, "--hand-off-at", "2M"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("Handed"))
        #expect(try Data(contentsOf: target) == data)
        #expect(w.origin.requests.count == 2 && w.origin.requests.last?.status == 206)
    }
}
