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

    /// `get -i` with 10 entries behind `-j 2`, handed off when the first holds 10 MiB: the
    /// running two and the eight queued ones all finish through download tasks (the origin
    /// sees URLSession's User-Agent for each), every file whole, and no file costs more than
    /// its size plus what the stopped requests had in flight (at most 4 MiB).
    @Test func aListHandsOffItsQueuedEntriesToo() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        // 24 MiB: a hand-off that fires late (the watcher reads the records of a loaded
        // machine: once at 14 MiB for 10) still finds both running ones short of their end
        // (at 16 MiB one had finished, and only 9 were handed off).
        let count = 10, size = 24 << 20
        var files: [String: Data] = [:]
        var list = ""
        for i in 0..<count {
            files["/f\(i).bin"] = try w.serve("f\(i).bin", size: size)
            // The origin sends 4 MiB/s a request: the first two reach 10 MiB well before they
            // end, and what a stopped reply had in flight stays small even when a loaded
            // machine reads late (a client-side limit would let the kernel's socket buffers
            // take megabytes more).
            var pace = Fault(); pace.bytesPerSecond = 4 << 20
            w.origin.setFault(pace, for: "/f\(i).bin")
            list += "\(w.origin.url("/f\(i).bin"))\n  out=f\(i).bin\n"
        }
        let listFile = w.base.appendingPathComponent("list.txt")
        try list.write(to: listFile, atomically: true, encoding: .utf8)
        let run = try await CLITests.run(["get", "-i", listFile.path, "-d", w.out.path, "--db", w.db, "-j", "2", "--hand-off-at", "10M"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("Handed 10 downloads off"), "\(run.stderr)")
        for (path, data) in files {
            #expect(try Data(contentsOf: w.out.appendingPathComponent(String(path.dropFirst()))) == data, "\(path)")
            let requests = w.origin.requests.filter { $0.path == path && $0.method == "GET" }
            #expect(requests.contains { FeatureTransportCLITests.viaURLSession($0) && [200, 206].contains($0.status) },
                    "\(path): \(requests.map { ($0.userAgent, $0.range, $0.status) })")
            // What the stopped request had in flight: the origin keeps writing into the socket
            // buffers until the engine stops reading, a second at most of its 4 MiB/s (about
            // 1 MiB on an idle machine, 2.8 MiB seen under a full parallel run). A hand-off
            // that fetched again from zero would cost the 10 MiB kept on top.
            let fetched = requests.reduce(Int64(0)) { $0 + $1.bodyBytesSent }
            #expect(fetched <= Int64(size + (4 << 20)), "\(path) cost \(fetched) bytes")
        }
        let engineGets = w.origin.requests.filter { !FeatureTransportCLITests.viaURLSession($0) && $0.method == "GET" }
        #expect(engineGets.count == 2, "\(engineGets.map(\.path))")   // only the two that ran before the hand-off
    }

    /// While a download is handed off, a second process's `courier status --json` shows its
    /// bytes growing: the task's progress is stored as it goes (about once a second).
    @Test func statusShowsTheSystemsProgressWhileHandedOff() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let size = 48 << 20
        let data = try w.serve("f.bin", size: size)
        var fault = Fault(); fault.stallAfterBytes = 4 << 20; fault.times = 1   // the engine's reply stops at 4 MiB
        fault.bytesPerSecond = 6 << 20   // every reply: 7 s for the rest (at 12 MiB/s, 4 s: a loaded machine's `status` runs saw two counts)
        w.origin.setFault(fault, for: "/f.bin")
        let target = w.out.appendingPathComponent("f.bin")
        let (p, out, err) = try CLITests.launch(["get", w.origin.url("/f.bin"), "-o", target.path, "--id", "film", "--db", w.db, "-q", "--hand-off-at", "2M"])
        var seen: [Int64] = []
        while p.isRunning {
            let status = try await CLITests.run(["status", "film", "--json", "--db", w.db])
            if let object = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any],
               object["state"] as? String == "handedOff", let bytes = (object["bytesReceived"] as? NSNumber)?.int64Value {
                seen.append(bytes)
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        let run = await CLITests.finish(p, out, err)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: target) == data)
        // Growing while handed off: at least three different counts, never going back.
        #expect(Set(seen).count >= 3, "\(seen)")
        #expect(seen == seen.sorted(), "\(seen)")
        #expect((seen.last ?? 0) > (seen.first ?? 0) && (seen.last ?? 0) <= Int64(size), "\(seen)")
    }
}
