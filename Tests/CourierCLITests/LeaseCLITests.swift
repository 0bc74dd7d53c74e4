import Courier
import CourierOrigin
import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Crossing processes: two `courier resume --all` on one database (each download runs in
/// exactly one of them, the lease), and a SIGKILLed segmented get resumed by a new process.
///
/// Two `courier resume --all` processes on one database: each download runs in exactly one
/// of them (the lease), both exit 0, and no byte is fetched twice.
@Suite(.serialized) struct LeaseCLITests {
    @Test func twoResumeAllProcessesNeverRunTheSameRecord() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        // More records than a page of the queue (4 × 4 here), so the processes also page
        // past records the other one has claimed meanwhile.
        let count = 40, size = 300_000
        var files: [String: Data] = [:]
        var slow = Fault(); slow.bytesPerSecond = 400_000
        for i in 0..<count {
            let name = "f\(i).bin"
            files[name] = try w.serve(name, size: size + i * 1000)
            w.origin.setFault(slow, for: "/" + name)
        }
        // Make the database (Courier migrates it), then queue the downloads in it directly,
        // as an app would have.
        try FileManager.default.createDirectory(atPath: (w.db as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = try CourierDatabase(path: w.db)
        let queue = try DatabaseQueue(path: w.db)
        let names = files.keys.sorted()
        try await queue.write { db in
            for (i, name) in names.enumerated() {
                let path = String(w.out.appendingPathComponent(name).path.dropFirst())
                try db.execute(sql: """
                    INSERT INTO courierDownload (id, remoteUrl, localFinalPath, partialPath, state, priority, createdAt, updatedAt)
                    VALUES (?, ?, ?, ?, 'queued', 0, ?, ?)
                    """, arguments: ["job\(i)", w.origin.url("/" + name), path, path + ".partial", Date(), Date()])
            }
        }
        try queue.close()

        let a = try CLITests.launch(["resume", "--all", "--parallel", "4", "--db", w.db])
        let b = try CLITests.launch(["resume", "--all", "--parallel", "4", "--db", w.db])
        let ra = await CLITests.finish(a.0, a.1, a.2)
        let rb = await CLITests.finish(b.0, b.1, b.2)
        #expect(ra.status == 0, "first: \(ra.stderr)")
        #expect(rb.status == 0, "second: \(rb.stderr)")
        for text in [ra.stderr, rb.stderr] { #expect(!text.lowercased().contains("database is locked")) }

        for (name, data) in files {
            #expect(try Data(contentsOf: w.out.appendingPathComponent(name)) == data, "\(name)")
            // Each file went out exactly once: had both processes run it, more would have.
            let served = w.origin.requests.filter { $0.path == "/" + name && $0.method == "GET" }.map(\.bodyBytesSent).reduce(0, +)
            #expect(served == Int64(data.count), "\(name): \(served) bytes served for \(data.count)")
        }
        let list = try await CLITests.run(["list", "--json", "--db", w.db])
        #expect(list.stdout.components(separatedBy: "\"state\" : \"completed\"").count - 1 == count)
        #expect(!list.stdout.contains("runningIn"))
    }

    /// A segmented `courier get` SIGKILLed midway: the same command resumes every range
    /// (no request from byte 0 again) and the file is byte-identical.
    @Test func aKilledSegmentedGetResumesEveryRange() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("seg.bin", size: 24 << 20)
        var slow = Fault(); slow.stallAfterBytes = 2 << 20   // every range hangs at 2 MiB: none can finish before the kill
        w.origin.setFault(slow, for: "/seg.bin")
        let target = w.out.appendingPathComponent("seg.bin")
        let args = ["get", w.origin.url("/seg.bin"), "-o", target.path, "--connections", "4", "--min-split-size", "1048576", "--db", w.db, "-q"]
        let (p, out, err) = try CLITests.launch(args)
        // Kill once every range has persisted progress.
        func saved() throws -> [(start: Int64, next: Int64)] {
            guard FileManager.default.fileExists(atPath: w.db) else { return [] }
            let q = try DatabaseQueue(path: w.db)
            defer { try? q.close() }
            return try q.read { db in
                guard try db.tableExists("courierSegment") else { return [] }
                return try Row.fetchAll(db, sql: "SELECT start, start + received AS next FROM courierSegment WHERE received > 0")
                    .map { (start: $0["start"], next: $0["next"]) }
            }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        var kept: [(start: Int64, next: Int64)] = []
        while ContinuousClock.now < deadline {
            kept = (try? saved()) ?? []
            if kept.count >= 4 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        #expect(kept.count >= 4)
        #expect(FileManager.default.fileExists(atPath: target.path + ".partial"))
        #expect(!FileManager.default.fileExists(atPath: target.path))

        w.origin.setFault(nil, for: "/seg.bin")
        w.origin.clearRequests()
        let second = try await CLITests.run(args)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(try Data(contentsOf: target) == data)
        let ranges = w.origin.requests.compactMap(\.range)
        #expect(ranges.count >= 4, "\(ranges)")
        #expect(!ranges.contains("bytes=0-"), "every range resumed: \(ranges)")
        #expect(w.origin.requests.allSatisfy { $0.status == 206 && $0.ifRange != nil })
        // No range asks again for bytes it held at the kill (what it persisted).
        for r in ranges {
            let start = Int64(r.dropFirst(6).prefix { $0 != "-" }) ?? -1
            #expect(!kept.contains { start >= $0.start && start < $0.next }, "\(r) refetches kept bytes")
        }
    }
}
