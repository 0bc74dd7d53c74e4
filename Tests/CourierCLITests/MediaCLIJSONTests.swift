import CourierOrigin
import CourierTestSupport
import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--json` on the media commands that act, `--keep-media`, E_NOT_MEDIA's exit code, and
/// the DOWNLOAD button's media group from the command line.
@Suite(.serialized) struct MediaCLIJSONTests {
    private func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test func downloadJSONKeepMediaAndAPageServedAsMedia() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try MediaCLITests().jellyfin(w, mediaSize: 64 << 10)
        try Data(#"{"Id":"film1","Type":"Movie","Name":"Film","MediaSources":[{"Id":"v1","Container":"mkv","MediaStreams":[{"Index":3,"Type":"Subtitle","Codec":"srt","Language":"spa"}]}]}"#.utf8)
            .write(to: w.served.appendingPathComponent("jellyfin/items/film1.json"))
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("jellyfin/subtitles"), withIntermediateDirectories: true)
        try Data("1\n00:00:01,000 --> 00:00:02,000\nHola.\n".utf8).write(to: w.served.appendingPathComponent("jellyfin/subtitles/v1-3.srt"))
        let root = w.base.appendingPathComponent("lib")
        let base = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1", "--quiet"]

        let first = try await CLITests.run(base + ["--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let report = try object(first.stdout)
        #expect(report["ok"] as? Bool == true && report["itemId"] as? String == "film1" && report["versionId"] as? String == "v1")
        #expect(report["mediaPath"] as? String == root.appendingPathComponent("Downloads/film1/film1-v1.mkv").path)
        #expect((report["subtitlePaths"] as? [String])?.isEmpty == true)

        // The subtitle asked for later, keeping the film: no media request.
        w.origin.clearRequests()
        let later = try await CLITests.run(base + ["--json", "--keep-media", "--subtitles", "3"])
        #expect(later.status == 0, "\(later.stderr)")
        #expect(try object(later.stdout)["subtitlePaths"] as? [String] == [root.appendingPathComponent("Downloads/film1/film1-v1.3.spa.srt").path])
        #expect(!w.origin.requests.contains { $0.path.hasSuffix("/Download") })

        // A page served as the film, downloaded again: exit 4 (integrity), E_NOT_MEDIA in the
        // JSON, the copy in the library untouched.
        let copy = try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv"))
        let page = "<!DOCTYPE html><html><body>Sign in" + String(repeating: " ", count: 30_000) + "</body></html>"
        try Data(page.utf8).write(to: w.served.appendingPathComponent("jellyfin/media/v1"))
        let refused = try await CLITests.run(base + ["--json"])
        #expect(refused.status == 4, "\(refused.stderr)")
        let failure = try object(refused.stdout)
        #expect(failure["ok"] as? Bool == false && failure["code"] as? String == "E_NOT_MEDIA")
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv")) == copy)
    }

    @Test func pauseResumeCancelJSONAcrossProcesses() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try MediaCLITests().jellyfin(w, mediaSize: 8 << 20)
        // Stalled half way until the pause (a body left to flow could end before the
        // pausing process is up), as in MediaCLITests.
        var slow = Fault(); slow.bytesPerSecond = 2 << 20; slow.stallAfterBytes = 4 << 20
        w.origin.setFault(slow, for: "/Items/v1/Download")
        let root = w.base.appendingPathComponent("lib")
        let (p, out, err) = try CLITests.launch(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1"])
        try await PartialFileSize.wait(root.appendingPathComponent("Downloads/film1/film1-v1.mkv.partial"), atLeast: 1 << 20)
        let pause = try await CLITests.run(["media", "pause", "--root", root.path, "film1", "--json"])
        #expect(pause.status == 0, "\(pause.stderr)")
        let paused = try object(pause.stdout)
        #expect(paused["ok"] as? Bool == true && paused["action"] as? String == "paused" && paused["versionId"] as? String == "v1")
        #expect(await CLITests.finish(p, out, err).status == 130)

        w.origin.setFault(nil, for: "/Items/v1/Download")
        w.origin.endStalls()
        let resume = try await CLITests.run(["media", "resume", "--root", root.path, "--server", w.origin.url("/"), "--all", "--quiet", "--json"])
        #expect(resume.status == 0, "\(resume.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(resume.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 1 && list.first?["mediaPath"] as? String == root.appendingPathComponent("Downloads/film1/film1-v1.mkv").path)
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv")) == data)

        let nothing = try await CLITests.run(["media", "cancel", "--root", root.path, "film1", "--json"])
        #expect(nothing.status == 6)
        let failure = try object(nothing.stdout)
        #expect(failure["ok"] as? Bool == false && failure["code"] as? String == "E_NOT_FOUND")
    }

    /// Rule 7 from the command line: a task stored under another id for the same video
    /// (`--media-type`/`--media-id`) is cleaned up, record and file, before the download.
    @Test func openCleansAnEarlierTaskOfTheSameVideoUnderAnotherId() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("clip.mp4", size: 40_000)
        let old = w.out.appendingPathComponent("old.mp4"), new = w.out.appendingPathComponent("new.mp4")
        let group = ["--media-type", "Movie", "--media-id", "film-9"]
        let first = try await CLITests.run(["open", "clip-old", "--url", w.origin.url("/clip.mp4"), "-o", old.path, "--db", w.db] + group)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: old.path))
        let second = try await CLITests.run(["open", "clip-new", "--url", w.origin.url("/clip.mp4"), "-o", new.path, "--db", w.db] + group)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try Data(contentsOf: new) == data)
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(try await CLITests.run(["open", "clip-old", "--db", w.db]).status == 6)   // its record went too
        // Opened again without --url, the record keeps its group.
        let again = try await CLITests.run(["list", "--db", w.db, "--json"])
        #expect(again.stdout.contains("\"mediaId\" : \"film-9\""), "\(again.stdout)")
    }

    /// The issue's acceptance, with a real SIGKILL: the process dies after the media file
    /// was put in place and before metadata.json was written; the same command again
    /// fetches no media bytes and writes the metadata.
    @Test func aKillBetweenTheMediaFileAndItsMetadataFetchesNoMediaAgain() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try MediaCLITests().jellyfin(w, mediaSize: 256 << 10)
        let root = w.base.appendingPathComponent("lib")
        let args = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1", "--quiet"]
        let (p, out, err) = try CLITests.launch(args + ["--chaos-pause-before-metadata-ms", "60000"])
        let media = root.appendingPathComponent("Downloads/film1/film1-v1.mkv")
        // In place and recorded: the file alone shows up between the engine's rename and its
        // record's commit, and a kill there (a wider window on a loaded machine) fetches the
        // small file again, as the engine says it may (its validators go with completion).
        let store = root.appendingPathComponent(".courier-media.sqlite").path
        #expect(try await eventually {
            guard FileManager.default.fileExists(atPath: media.path) else { return false }
            var readOnly = Configuration()
            readOnly.readonly = true   // never made by this test: the command makes it, in WAL mode
            let states = try? DatabaseQueue(path: store, configuration: readOnly).read { try String.fetchAll($0, sql: "SELECT state FROM courierDownload") }   // not there yet: asked again
            return states == ["completed"]
        })
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("Downloads/film1/metadata.json").path))

        w.origin.clearRequests()
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: media) == data)
        #expect(!w.origin.requests.contains { $0.path == "/Items/v1/Download" && $0.bodyBytesSent > 0 }, "\(w.origin.requests.map { "\($0.path) \($0.status) \($0.bodyBytesSent)" })")
        let meta = try String(contentsOf: root.appendingPathComponent("Downloads/film1/metadata.json"), encoding: .utf8)
        #expect(meta.contains("\"versionId\" : \"v1\""))
    }
}
