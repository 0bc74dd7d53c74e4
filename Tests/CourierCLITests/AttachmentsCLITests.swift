import CourierOrigin
import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `courier attachments` as a script would run it, including a sync killed mid-way.
@Suite(.serialized) struct AttachmentsCLITests {
    @Test func syncKilledMidwayLosesNothingAndNeverLeavesSyncedWithoutAFile() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let remoteDir = w.base.appendingPathComponent("remote")
        try FileManager.default.createDirectory(at: remoteDir, withIntermediateDirectories: true)
        let origin = try await CourierOrigin.start(directory: remoteDir, writable: true)
        defer { Task { try? await origin.stop() } }
        let remote = origin.url("/files")

        // Device A uploads four 2 MiB photos.
        var originals: [Data] = []
        var paths: [String] = []
        for i in 0..<4 {
            let data = try w.serve("p\(i).jpg", size: 2 << 20 + i)
            originals.append(data)
            paths.append(w.served.appendingPathComponent("p\(i).jpg").path)
        }
        let dbA = w.base.appendingPathComponent("a/app.sqlite").path
        try FileManager.default.createDirectory(atPath: (dbA as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let saved = try await CLITests.run(["attachments", "save", "--db", dbA, "--remote", remote] + paths)
        #expect(saved.status == 0, "\(saved.stderr)")
        let ids = saved.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 4)
        #expect(try await CLITests.run(["attachments", "sync", "--db", dbA, "--remote", remote]).status == 0)

        // Device B references them (downloads), has two uploads of its own and one delete pending.
        let dirB = w.base.appendingPathComponent("b")
        let (dbB, pool) = try await Self.device(dirB, referencing: ids)
        let own = try await CLITests.run(["attachments", "save", "--db", dbB, "--remote", remote, paths[0]])
        let ownID = own.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await CLITests.run(["attachments", "sync", "--db", dbB, "--remote", remote]).status == 0)
        #expect(try await CLITests.run(["attachments", "delete", "--db", dbB, "--remote", remote, ownID]).status == 0)
        let fresh = try await CLITests.run(["attachments", "save", "--db", dbB, "--remote", remote, paths[1], paths[2]])
        let freshIDs = fresh.stdout.split(separator: "\n").map(String.init)
        // The app links its new photos (as saveFile's hook would); unlinked ones get archived.
        try await pool.write { db in
            for id in freshIDs { try db.execute(sql: "INSERT INTO checklists (photo_id) VALUES (?)", arguments: [id]) }
        }

        // Downloads are slow (1 MiB/s per connection) and stall after 1 MiB: the sync is
        // killed while they run, however late the kill comes.
        var slow = Fault(); slow.bytesPerSecond = 1 << 20; slow.stallAfterBytes = 1 << 20
        origin.setDefaultFault(slow)
        let syncArgs = ["attachments", "sync", "-v", "--db", dbB, "--remote", remote, "--watch-sql", "SELECT photo_id FROM checklists", "--watch-extension", "jpg"]
        let (p, pout, perr) = try CLITests.launch(syncArgs)
        let attachmentsB = dirB.appendingPathComponent("attachments")
        _ = try await waitUntil {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: attachmentsB.path)) ?? []
            return names.contains { $0.hasSuffix(".partial") && PartialFileSize.of(attachmentsB.appendingPathComponent($0)) > 256 << 10 }
        }
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, pout, perr)
        #expect(p.terminationReason == .uncaughtSignal)

        // Right after the kill: no attachment claims SYNCED without its file.
        try await expectNoSyncedWithoutFile(pool, dir: attachmentsB)
        let interrupted = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM attachments WHERE state = 0") ?? 0 }
        #expect(interrupted > 0, "the kill came after every download finished")

        // Restart: everything pending finishes.
        origin.setDefaultFault(nil)
        origin.endStalls()
        let again = try await CLITests.run(syncArgs)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr.suffix(3000))")
        try await expectNoSyncedWithoutFile(pool, dir: attachmentsB)
        for (id, data) in zip(ids, originals) {
            #expect(try Data(contentsOf: attachmentsB.appendingPathComponent("\(id).jpg")) == data)
        }
        for id in freshIDs { #expect(FileManager.default.fileExists(atPath: remoteDir.appendingPathComponent("files/\(id).jpg").path)) }
        #expect(!FileManager.default.fileExists(atPath: remoteDir.appendingPathComponent("files/\(ownID).jpg").path))
        let states = try pool.read { db in try Row.fetchAll(db, sql: "SELECT id, state FROM attachments") }
        #expect(states.allSatisfy { ($0["state"] as Int) == 3 }, "\(states)")
        #expect(!states.contains { ($0["id"] as String) == ownID })
        // Interrupted downloads resumed rather than starting over.
        #expect(origin.requests.contains { $0.method == "GET" && $0.status == 206 })
    }

    @Test func fileRemoteAndListJSON() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("doc.pdf", size: 70_000)
        let remoteDir = w.base.appendingPathComponent("shared-folder")
        let db = w.base.appendingPathComponent("x/app.sqlite").path
        try FileManager.default.createDirectory(atPath: (db as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let remote = "file://" + remoteDir.path
        let saved = try await CLITests.run(["attachments", "save", "--db", db, "--remote", remote, "--media-type", "application/pdf",
                                            w.served.appendingPathComponent("doc.pdf").path])
        let id = saved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(saved.status == 0 && !id.isEmpty)
        #expect(try await CLITests.run(["attachments", "sync", "--db", db, "--remote", remote]).status == 0)
        #expect(try Data(contentsOf: remoteDir.appendingPathComponent("\(id).pdf")) == data)
        let list = try await CLITests.run(["attachments", "list", "--json", "--db", db, "--remote", remote])
        #expect(list.stdout.contains("\"state\" : \"SYNCED\"") && list.stdout.contains("application/pdf"))
        let bad = try await CLITests.run(["attachments", "sync", "--db", db, "--remote", "ftp://nope"])
        #expect(bad.status == 64)
    }

    /// An app's database on another device, whose checklists reference `ids`: its sync downloads them.
    static func device(_ dir: URL, referencing ids: [String]) async throws -> (db: String, pool: DatabasePool) {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("app.sqlite").path
        let pool = try DatabasePool(path: path)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE checklists (id INTEGER PRIMARY KEY, photo_id TEXT)")
            for id in ids { try db.execute(sql: "INSERT INTO checklists (photo_id) VALUES (?)", arguments: [id]) }
        }
        return (path, pool)
    }

    private func expectNoSyncedWithoutFile(_ pool: DatabasePool, dir: URL) async throws {
        let synced = try pool.read { db in try Row.fetchAll(db, sql: "SELECT id, local_uri FROM attachments WHERE state = 3") }
        for row in synced {
            let local: String? = row["local_uri"]
            #expect(local.map { FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).path) } == true, "SYNCED without a file: \(row)")
        }
    }

    private func waitUntil(_ timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

enum PartialFileSize {
    static func of(_ url: URL) -> Int { ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0 }

    /// Waits (up to 30 s) until the file at `url` holds at least `bytes`.
    static func wait(_ url: URL, atLeast bytes: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while of(url) < bytes, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }
}
