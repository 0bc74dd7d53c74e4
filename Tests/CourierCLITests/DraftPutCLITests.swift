import Courier
import CourierAttachments
import CourierTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 48's acceptance: `courier put` of 256 MiB to `courier serve --resumable-uploads-port`
/// over the IETF draft, SIGKILLed at half, then run again, for interop versions 3, 5 and 6.
/// What went up is read from the server's own log (`courier serve` prints each request with
/// its offset and body bytes), never from Courier's. Also: detection (`--protocol auto`)
/// and a server without the draft. Over AsyncHTTPClient only: FoundationNetworking's
/// URLSession takes the creation's `104` for its reply (DraftInteropTests).
@Suite(.serialized) struct DraftPutCLITests {
    /// One request as `courier serve` printed it.
    struct Logged: Equatable {
        let method: String
        let offset: Int64?
        let body: Int64
        let cut: Bool
    }

    /// A running `courier serve --writable --resumable-uploads-port 0`.
    final class Served: @unchecked Sendable {   // the process and pipes, used by one test
        let dir = temporaryFolder("courier-draft-put")
        let process: Process, out: Pipe, err: Pipe, watch: StderrWatch
        var port = 0, originPort = 0
        var served: URL { dir.appendingPathComponent("served") }

        init() async throws {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("served"), withIntermediateDirectories: true)
            (process, out, err) = try CLITests.launch(["serve", dir.appendingPathComponent("served").path, "--port", "0", "--writable",
                                                      "--resumable-uploads-port", "0"])
            watch = StderrWatch(out)   // its standard output, here
            let started = await watch.until("Resumable uploads")
            let line = watch.sofar.split(separator: "\n").first { $0.hasPrefix("Resumable uploads") } ?? ""
            port = Int(line.split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? 0
            let serving = watch.sofar.split(separator: "\n").first { $0.hasPrefix("Serving") } ?? ""
            originPort = Int(serving.split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? 0
            guard started, port != 0, originPort != 0 else {
                await stop()
                throw CourierError(.unexpected, "courier serve did not start: \(watch.sofar)")
            }
        }

        /// Runs `body` with a server that is stopped afterwards, whatever `body` threw.
        static func run(_ body: (Served) async throws -> Void) async throws {
            let server = try await Served()
            do { try await body(server) } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }

        /// The log once its appends' bodies add up to `bytes`: each line is printed before
        /// its reply, but read here on a thread of its own (within 30 s, else as it stands).
        func log(untilAppended bytes: Int64) async -> [Logged] {
            _ = try? await eventually(timeout: .seconds(30)) { self.log.filter { $0.method == "PATCH" }.reduce(Int64(0)) { $0 + $1.body } >= bytes }   // the caller checks the log
            return log
        }

        func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

        /// The server's log of the draft's requests so far.
        var log: [Logged] {
            watch.sofar.split(separator: "\n").compactMap { line -> Logged? in
                guard line.hasPrefix("resumable upload: ") else { return nil }
                let words = line.dropFirst("resumable upload: ".count).split(separator: " ")
                guard let method = words.first, let colon = words.firstIndex(where: { $0.hasSuffix(":") }) else { return nil }
                let offset = words.firstIndex(of: "offset").flatMap { Int64(words[$0 + 1].trimmingCharacters(in: CharacterSet(charactersIn: ":"))) }
                return Logged(method: String(method), offset: offset, body: Int64(words[colon + 1]) ?? -1, cut: line.hasSuffix(", cut"))
            }
        }

        func stop() async {
            kill(process.processIdentifier, SIGINT)
            if (try? await eventually(timeout: .seconds(10)) { !self.process.isRunning }) != true { kill(process.processIdentifier, SIGKILL) }   // stopped either way
            _ = await CLITests.finish(process, err, watch)   // its standard error drained as the output
            try? FileManager.default.removeItem(at: dir)   // the test's files (up to 512 MiB) go with it
        }
    }

    @Test(arguments: [3, 5, 6])
    func aDraftPutKilledAtHalfSendsOnlyWhatTheServerDidNotHold(version: Int) async throws {
        try await Served.run { server in
            let name = "v\(version).bin"
            let (file, sha) = try PutCLITests.file(server.dir, name, seed: UInt64(20 + version))
            let db = server.dir.appendingPathComponent("courier.sqlite").path
            let args = ["put", file.path, server.url("/films/\(name)"), "--protocol", "ietf", "--ietf-version", String(version),
                        "--db", db, "--limit-rate", "16M"]
            let atKill = try await PutCLITests.killAt(PutCLITests.half, args, database: db)
            #expect(atKill.kind == .ietf && atKill.confirmedBytes < Int64(PutCLITests.size), "\(atKill)")
            let upload = try #require(atKill.remoteId)

            let again = try await CLITests.run(args)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == upload, "the same upload went on")
            #expect(again.stderr.contains("Resuming \(name)"))
            #expect(CLITests.sha256(try Data(contentsOf: server.served.appendingPathComponent("films/\(name)"))) == sha)
            // The server's log: the rerun asked the offset, then sent from exactly what the server
            // held (an append the kill cut short included, when the kill fell inside one rather
            // than between two), and every byte of the file arrived once.
            let log = await server.log(untilAppended: Int64(PutCLITests.size))
            let asked = try #require(log.firstIndex { $0.method == "HEAD" }, "\(log)")
            let held = log[..<asked].filter { $0.method == "PATCH" }.reduce(Int64(0)) { $0 + $1.body }
            #expect(held >= atKill.confirmedBytes && held < Int64(PutCLITests.size))
            #expect(log[(asked + 1)...].first.map { $0.method == "PATCH" && $0.offset == held } == true, "\(log[asked...])")
            #expect(log.filter { $0.method == "PATCH" }.reduce(Int64(0)) { $0 + $1.body } == Int64(PutCLITests.size), "\(log)")
            #expect(try await CourierDatabase(path: db).uploads().isEmpty)
        }
    }

    /// `--protocol auto`: a server that speaks the draft gets it; a tus server gets tus; and
    /// `--protocol ietf` to a server without the draft says so, before any byte of the file.
    @Test func detectionUsesTheDraftWhereItIsSpokenAndTusElsewhere() async throws {
        try await Served.run { server in
            let (file, sha) = try PutCLITests.file(server.dir, "small.bin", size: 3 << 20, seed: 30)
            let db = server.dir.appendingPathComponent("courier.sqlite").path
            let drafted = try await CLITests.run(["put", file.path, server.url("/auto/small.bin"), "--protocol", "auto", "--db", db, "--part-size", "1M"])
            #expect(drafted.status == 0 && drafted.stdout.contains("/resumable_upload/"), "\(drafted.stderr)")
            #expect(CLITests.sha256(try Data(contentsOf: server.served.appendingPathComponent("auto/small.bin"))) == sha)
            let log = await server.log(untilAppended: 3 << 20)
            #expect(log.map(\.method) == ["POST", "PATCH", "PATCH", "PATCH"], "\(log)")

            // The plain origin beside it answers the creation without the draft.
            let refused = try await CLITests.run(["put", file.path, "http://127.0.0.1:\(server.originPort)/up/small.bin", "--protocol", "ietf", "--db", db])
            #expect(refused.status == 3 && refused.stderr.contains("E_PROTOCOL") && refused.stderr.contains("does not speak the resumable upload draft"),
                    "\(refused.status): \(refused.stderr)")

            if TusServer.shared.isAvailable {
                let tus = try await CLITests.run(["put", file.path, TusServer.shared.endpoint.absoluteString, "--protocol", "auto", "--db", db])
                #expect(tus.status == 0, "\(tus.stderr)")
                let location = tus.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(TusServer.shared.patches(of: location).reduce(Int64(0)) { $0 + $1.received } == 3 << 20, "\(location)")
            }
        }
    }

    /// The attachment queue over the draft (`ietf+http://…?files=…`): `attachments sync`
    /// SIGKILLed at half, then run again, sends only what the server did not hold.
    @Test func attachmentsSyncOverTheDraftKilledAtHalfSendsOnlyTheRest() async throws {
        try await Served.run { server in
            let (file, sha) = try PutCLITests.file(server.dir, "field-video.mov", seed: 41)
            let app = server.dir.appendingPathComponent("app.sqlite").path
            let remote = "ietf+\(server.url("/att"))?files=http://127.0.0.1:\(server.originPort)/att"
            let saved = try await CLITests.run(["attachments", "save", "--db", app, "--remote", remote, file.path])
            #expect(saved.status == 0, "\(saved.stderr)")
            let listed = try await CLITests.run(["attachments", "list", "--db", app, "--remote", remote, "--json"])
            let filename = try #require((try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])?.first?["filename"] as? String)

            let sync = ["attachments", "sync", "--db", app, "--remote", remote, "--limit-rate", "16M"]
            let atKill = try await PutCLITests.killAt(PutCLITests.half, sync, database: app)
            #expect(atKill.kind == .ietf && atKill.confirmedBytes < Int64(PutCLITests.size), "\(atKill)")
            let again = try await CLITests.run(sync)
            #expect(again.status == 0 && again.stdout.contains("SYNCED: 1"), "\(again.stdout) \(again.stderr)")
            #expect(CLITests.sha256(try Data(contentsOf: server.served.appendingPathComponent("att/\(filename)"))) == sha)
            let log = await server.log(untilAppended: Int64(PutCLITests.size))
            let asked = try #require(log.firstIndex { $0.method == "HEAD" }, "\(log)")
            let held = log[..<asked].filter { $0.method == "PATCH" }.reduce(Int64(0)) { $0 + $1.body }
            #expect(log[(asked + 1)...].first.map { $0.method == "PATCH" && $0.offset == held } == true, "\(log[asked...])")
            #expect(log.filter { $0.method == "PATCH" }.reduce(Int64(0)) { $0 + $1.body } == Int64(PutCLITests.size), "\(log)")
        }
    }

    /// `put --hand-off-at` over the draft: the rest goes up in one URLSession upload task
    /// (an append marked complete, from the offset the server confirmed), whose reply the
    /// engine adopts; nothing the server held went up twice.
    @Test func aDraftUploadHandedOffAtHalfSendsTheRestOnceInOneTask() async throws {
        try await Served.run { server in
            let (file, sha) = try PutCLITests.file(server.dir, "handoff.bin", seed: 51)
            let db = server.dir.appendingPathComponent("courier.sqlite").path
            let run = try await CLITests.run(["put", file.path, server.url("/up/handoff.bin"), "--protocol", "ietf", "--db", db, "--hand-off-at", "128M"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("Handed 1 piece(s)"), "\(run.stderr)")
            #expect(CLITests.sha256(try Data(contentsOf: server.served.appendingPathComponent("up/handoff.bin"))) == sha)
            let patches = await server.log(untilAppended: Int64(PutCLITests.size)).filter { $0.method == "PATCH" }
            #expect(patches.reduce(Int64(0)) { $0 + $1.body } == Int64(PutCLITests.size), "\(patches)")
            #expect(zip(patches, patches.dropFirst()).allSatisfy { a, b in a.offset.map { $0 + a.body } == b.offset }, "\(patches)")
            #expect(patches.last.map { $0.body >= PutCLITests.half - (8 << 20) && !$0.cut } == true, "\(patches)")   // the task's append: the rest
            #expect(try await CourierDatabase(path: db).uploads().isEmpty)
        }
    }
}
