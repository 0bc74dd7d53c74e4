import CourierCore
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing

/// Issue 31: what a new user met in an hour with the CLI, each through the built binary.
@Suite(.serialized) struct NewUserCLITests {
    /// Point 1: a URL whose path cannot be sent as written (`%FF` is not UTF-8) was sent as
    /// `GET /` and the root page saved with exit 0. Now: E_INVALID_URL, exit 64, no request.
    @Test func aURLThatCannotBeSentAsWrittenIsRefusedWithoutARequest() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("hello.txt", size: 100)
        let target = w.out.appendingPathComponent("t.txt")
        let r = try await CLITests.run(["get", w.origin.url("/a%FFb/hello.txt"), "-o", target.path, "--db", w.db])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("E_INVALID_URL"))
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(w.origin.requests.isEmpty)
    }

    /// Point 2: a port above 65535 crashed the CLI (SIGILL), and the record it left crashed
    /// every later `resume --all`. Now: exit 64 with E_INVALID_URL and no record; a stored
    /// record that cannot be run fails with its code.
    @Test func aPortPast65535IsABadURLAndAStoredOneFailsWithItsCode() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let target = w.out.appendingPathComponent("x.bin")
        let r = try await CLITests.run(["get", "http://127.0.0.1:99999/x", "-o", target.path, "--db", w.db])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("E_INVALID_URL") && r.stderr.contains("65535"))
        let stored = FileManager.default.fileExists(atPath: w.db) ? try await CourierDatabase(path: w.db).allRecords() : []
        #expect(stored.isEmpty)

        // A record stored by an older build (or another tool) with such a URL.
        let database = try CourierDatabase(path: w.db)
        try await database.save(DownloadRecord(id: "old", remoteUrl: "http://127.0.0.1:99999/x", localFinalPath: String(target.path.dropFirst()),
                                                partialPath: String(target.path.dropFirst()) + ".partial"))
        let again = try await CLITests.run(["resume", "--all", "--db", w.db])
        #expect(again.status == 64, "status \(again.status): \(again.stderr)")   // a code, not a signal
        #expect(again.stderr.contains("E_INVALID_URL"))
        let record = try #require(try await database.record(id: "old"))
        #expect(record.state == .failed && record.lastError?.code == .invalidURL)
        let third = try await CLITests.run(["resume", "--all", "--db", w.db])
        #expect(third.status == 64, "\(third.stderr)")   // the next one too: the queue is not poisoned
    }

    /// Runs `mount`/`umount` (root, as CI runs); `false` when this machine cannot mount.
    static func sh(_ args: [String]) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }   // no such tool: the caller skips
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    /// Point 5: a 6-byte file on a read-only file system was refused as E_NO_SPACE (the
    /// 100 MiB reserve) and left paused. Now a read-only target is E_PERMISSION (failed, not
    /// paused), and the room kept free scales with the file: 6 bytes fit on a 4 MiB disk, 3 MiB
    /// do not (3 MiB kept beside them).
    @Test func aReadOnlyTargetIsAPermissionErrorAndTheReserveScalesWithTheFile() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("six.txt", size: 6)
        _ = try w.serve("three.bin", size: 3 << 20)
        let ro = w.base.appendingPathComponent("ro"), small = w.base.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: ro, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        guard Self.sh(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", ro.path]) else {
            print("skipped: this machine cannot mount a tmpfs (not root?)")
            return
        }
        defer { _ = Self.sh(["umount", ro.path]) }
        guard Self.sh(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small.path]) else { return print("skipped: cannot mount a tmpfs") }
        defer { _ = Self.sh(["umount", small.path]) }

        let readOnly = try await CLITests.run(["get", w.origin.url("/six.txt"), "-o", ro.appendingPathComponent("six.txt").path, "--db", w.db])
        #expect(readOnly.status == 5, "\(readOnly.stderr)")
        #expect(readOnly.stderr.contains("E_PERMISSION") && readOnly.stderr.contains("read-only"), "\(readOnly.stderr)")
        #expect(!readOnly.stderr.contains("E_NO_SPACE"))
        let record = try await CourierDatabase(path: w.db).allRecords().first
        #expect(record?.state == .failed)   // not paused: no space would ever help it

        let six = try await CLITests.run(["get", w.origin.url("/six.txt"), "-o", small.appendingPathComponent("six.txt").path, "--db", w.db])
        #expect(six.status == 0, "\(six.stderr)")
        let three = try await CLITests.run(["get", w.origin.url("/three.bin"), "-o", small.appendingPathComponent("three.bin").path, "--db", w.db])
        #expect(three.status == 5 && three.stderr.contains("E_NO_SPACE"), "\(three.stderr)")
    }

    /// Point 7: against a server without range support, "Resuming from 22.4 MiB" was printed,
    /// then the download started from 0 without a word. Now the restart is said.
    @Test func aServerThatDoesNotResumeIsSaidWhenTheKeptBytesAreGivenUp() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 8 << 20)
        let target = w.out.appendingPathComponent("f.bin")
        let args = ["get", w.origin.url("/f.bin"), "-o", target.path, "--db", w.db]
        func killHalfway() async throws {
            var stall = Fault(); stall.stallAfterBytes = 3 << 20; stall.times = 1
            w.origin.setFault(stall, for: "/f.bin")
            let (p, out, err) = try CLITests.launch(args)
            let partial = target.path + ".partial"
            #expect(try await eventually(timeout: .seconds(30)) {
                ((try? FileManager.default.attributesOfItem(atPath: partial))?[.size] as? Int ?? 0) >= 2 << 20   // nil: not yet made
            })
            kill(p.processIdentifier, SIGKILL)
            _ = await CLITests.finish(p, out, err)
        }

        // A server that resumes: "Resuming", and no word of starting over.
        try await killHalfway()
        w.origin.setFault(nil, for: "/f.bin")
        let resumed = try await CLITests.run(args)
        #expect(resumed.status == 0 && resumed.stderr.contains("Resuming f.bin from"), "\(resumed.stderr)")
        #expect(!resumed.stderr.contains("from its start"), "\(resumed.stderr)")
        #expect(w.origin.requests.last?.status == 206)
        try FileManager.default.removeItem(at: target)

        // One that does not: the restart is said.
        try await killHalfway()
        var noRanges = Fault(); noRanges.ignoreRange = true
        w.origin.setFault(noRanges, for: "/f.bin")
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("Resuming f.bin from"), "\(again.stderr)")
        #expect(again.stderr.contains("from its start instead of the rest") && again.stderr.contains("downloading it again from 0"), "\(again.stderr)")
        #expect(try Data(contentsOf: target) == data)
        #expect(w.origin.requests.last?.range != nil && w.origin.requests.last?.status == 200)
    }

    /// Point 4: raw NSError dumps behind codes. `-o -` into a reader that stops (`| head`)
    /// stops quietly (exit 141, as SIGPIPE would); a folder that cannot be made is
    /// E_PERMISSION with words; a file name that is not UTF-8 is named as such, not E_FNF.
    @Test func aClosedPipeADeniedFolderAndANameThatIsNotUTF8EachGetTheirCodeInWords() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("big.bin", size: 8 << 20)

        // `courier get URL -o - | head -c 10`
        let url = w.origin.url("/big.bin")
        let (first, status, stderr) = try await offThePool {
            let (p, out, err) = try CLITests.launch(["get", url, "-o", "-"])
            let first = out.fileHandleForReading.readData(ofLength: 10)
            try out.fileHandleForReading.close()
            p.waitUntilExit()
            return (first, p.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        #expect(first.count == 10)
        #expect(status == 141, "\(status): \(stderr)")
        #expect(!stderr.contains("Error Domain") && !stderr.contains("E_NETWORK"), "\(stderr)")

        // A folder on a read-only file system: for -d, and for --db.
        let ro = w.base.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: ro, withIntermediateDirectories: true)
        if Self.sh(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", ro.path]) {
            defer { _ = Self.sh(["umount", ro.path]) }
            let dir = try await CLITests.run(["get", w.origin.url("/big.bin"), "-d", ro.appendingPathComponent("sub").path, "--db", w.db])
            #expect(dir.status == 5 && dir.stderr.contains("E_PERMISSION") && !dir.stderr.contains("Error Domain"), "\(dir.stderr)")
            let db = try await CLITests.run(["get", w.origin.url("/big.bin"), "-o", w.out.appendingPathComponent("b.bin").path,
                                             "--db", ro.appendingPathComponent("sub/c.sqlite").path])
            #expect(db.status == 5 && db.stderr.contains("E_PERMISSION") && !db.stderr.contains("Error Domain"), "\(db.stderr)")
        } else {
            print("skipped the read-only folder: this machine cannot mount a tmpfs")
        }

        // A file whose name is not UTF-8 (the byte 0xFF), given to `put`.
        let (folder, script) = (w.out, "printf x > \"$(printf 'n\\377.bin')\" && exec \"$0\" put \"$(printf 'n\\377.bin')\" " + w.origin.url("/up/n.bin") + " --db " + w.db)
        let (shellStatus, said) = try await offThePool {
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.currentDirectoryURL = folder
            shell.arguments = ["-c", script, CLITests.binary]
            let shellErr = Pipe()
            shell.standardError = shellErr
            shell.standardOutput = FileHandle.nullDevice
            try shell.run()
            shell.waitUntilExit()
            return (shell.terminationStatus, String(decoding: shellErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        #expect(shellStatus == 64, "\(shellStatus): \(said)")
        #expect(said.contains("E_INVALID_PATH") && said.contains("not UTF-8"), "\(said)")
    }

    /// Point 6 (in part): `attachments sync` hid why an attachment stays pending (only `-v`
    /// said it). Now each pending one is named with its last error's code and words.
    @Test func attachmentsSyncSaysWhyEachPendingOneIsPending() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let (db, _) = try await AttachmentsCLITests.device(w.base.appendingPathComponent("device"), referencing: ["photo-1"])
        let r = try await CLITests.run(["attachments", "sync", "--db", db, "--remote", w.origin.url("/att"),
                                        "--watch-sql", "SELECT photo_id FROM checklists", "--watch-extension", "jpg"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("photo-1") && r.stderr.contains("QUEUED_DOWNLOAD") && r.stderr.contains("E_HTTP_4XX"), "\(r.stderr)")
    }

    /// Point 6, `--json` for `get`: one JSON document on standard output, nothing else there.
    @Test func getPrintsOneJSONDocument() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try w.serve("a.bin", size: 70_000)
        let target = w.out.appendingPathComponent("a.bin")
        let ok = try await CLITests.run(["get", w.origin.url("/a.bin"), "-o", target.path, "--db", w.db, "--json"])
        #expect(ok.status == 0, "\(ok.stderr)")
        let doc = try #require(try JSONSerialization.jsonObject(with: ok.stdoutData) as? [String: Any], "\(ok.stdout)")
        let first = try #require((doc["downloads"] as? [[String: Any]])?.first)
        #expect(doc["ok"] as? Bool == true && first["ok"] as? Bool == true && first["state"] as? String == "completed")
        #expect(first["path"] as? String == target.path && first["bytes"] as? Int == 70_000)

        let missing = try await CLITests.run(["get", w.origin.url("/none.bin"), "-o", w.out.appendingPathComponent("n.bin").path, "--db", w.db, "--json"])
        #expect(missing.status == 3, "\(missing.stderr)")
        let failed = try #require(try JSONSerialization.jsonObject(with: missing.stdoutData) as? [String: Any], "\(missing.stdout)")
        let entry = try #require((failed["downloads"] as? [[String: Any]])?.first)
        #expect(failed["ok"] as? Bool == false && entry["state"] as? String == "failed" && entry["code"] as? String == "E_HTTP_4XX")

        let bad = try await CLITests.run(["get", "http://127.0.0.1:99999/x", "-o", w.out.appendingPathComponent("x.bin").path, "--db", w.db, "--json"])
        #expect(bad.status == 64)
        let refused = try #require(try JSONSerialization.jsonObject(with: bad.stdoutData) as? [String: Any], "\(bad.stdout)")
        #expect(refused["ok"] as? Bool == false && refused["code"] as? String == "E_INVALID_URL")
    }

    /// Point 6: an attachment saved with an extension and watched on another device without
    /// one (no filename column, no --watch-extension) stayed QUEUED_DOWNLOAD for ever, asked
    /// for as `<id>`. A remote that lists finds the one `<id>.<ext>` and the download goes on;
    /// over one that cannot (HTTP), the pending line says what to give.
    @Test func anIdWatchedWithoutItsExtensionIsFoundOrSaidHowToFind() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let photo = w.base.appendingPathComponent("photo.jpg")
        try Data("a photo".utf8).write(to: photo)
        let remote = "file://" + w.base.appendingPathComponent("remote").path
        let phone = w.base.appendingPathComponent("phone/app.sqlite").path
        try FileManager.default.createDirectory(atPath: (phone as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let saved = try await CLITests.run(["attachments", "save", "--db", phone, "--remote", remote, photo.path])
        let id = saved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await CLITests.run(["attachments", "sync", "--db", phone, "--remote", remote]).status == 0)

        let (tablet, _) = try await AttachmentsCLITests.device(w.base.appendingPathComponent("tablet"), referencing: [id])
        let found = try await CLITests.run(["attachments", "sync", "--db", tablet, "--remote", remote, "--watch-sql", "SELECT photo_id FROM checklists"])
        #expect(found.status == 0, "\(found.stderr)")
        let list = try await CLITests.run(["attachments", "list", "--json", "--db", tablet, "--remote", remote])
        #expect(list.stdout.contains("SYNCED") && list.stdout.contains("\(id).jpg"), "\(list.stdout)")

        let (other, _) = try await AttachmentsCLITests.device(w.base.appendingPathComponent("other"), referencing: ["photo-2"])
        let http = try await CLITests.run(["attachments", "sync", "--db", other, "--remote", w.origin.url("/att"), "--watch-sql", "SELECT photo_id FROM checklists"])
        #expect(http.status == 3 && http.stderr.contains("without an extension") && http.stderr.contains("--watch-extension"), "\(http.stderr)")
    }
}
