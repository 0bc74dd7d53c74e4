import CourierOrigin
import Foundation
import GRDB
import Testing

/// Two `courier resume --all` processes on one database: each download runs in exactly one
/// of them (the lease), both exit 0, and no byte is fetched twice.
@Suite(.serialized) struct LeaseCLITests {
    @Test func twoResumeAllProcessesNeverRunTheSameRecord() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let count = 6, size = 3 << 20
        var files: [String: Data] = [:]
        var slow = Fault(); slow.bytesPerSecond = 2 << 20
        for i in 0..<count {
            let name = "f\(i).bin"
            files[name] = try w.serve(name, size: size + i * 1000)
            w.origin.setFault(slow, for: "/" + name)
        }
        // Make the database (the CLI migrates it), then queue the downloads in it directly,
        // as an app would have.
        #expect(try await CLITests.run(["list", "--db", w.db]).status == 0)
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
}
