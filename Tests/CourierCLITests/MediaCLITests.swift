import CourierOrigin
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct MediaCLITests {
    func jellyfin(_ w: CLITests.World, mediaSize: Int) throws -> Data {
        for dir in ["jellyfin/items", "jellyfin/media", "jellyfin/images"] {
            try FileManager.default.createDirectory(at: w.served.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        try Data(#"{"Id":"film1","Type":"Movie","Name":"Film","MediaSources":[{"Id":"v1","Container":"mkv"}]}"#.utf8)
            .write(to: w.served.appendingPathComponent("jellyfin/items/film1.json"))
        let data = try w.serve("jellyfin/media/v1", size: mediaSize)
        for kind in ["Primary", "Backdrop"] { try Data("jpeg".utf8).write(to: w.served.appendingPathComponent("jellyfin/images/film1-\(kind).jpg")) }
        return data
    }

    @Test func killedMediaDownloadResumesAndCompletesTheTree() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try jellyfin(w, mediaSize: 16 << 20)
        w.origin.requireToken("TOKEN-9")
        var slow = Fault(); slow.bytesPerSecond = 4 << 20; slow.stallAfterBytes = 8 << 20   // the kill lands before the end
        w.origin.setFault(slow, for: "/Items/v1/Download")
        let root = w.base.appendingPathComponent("lib")
        let args = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1"]
        setenv("JELLYFIN_TOKEN", "TOKEN-9", 1)
        defer { unsetenv("JELLYFIN_TOKEN") }
        let (p, out, err) = try CLITests.launch(args)
        let partial = root.appendingPathComponent("Downloads/film1/film1-v1.mkv.partial")
        try await PartialFileSize.wait(partial, atLeast: 3 << 20)
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        let kept = PartialFileSize.of(partial)
        #expect(kept >= 3 << 20 && kept < data.count)

        w.origin.setFault(nil, for: "/Items/v1/Download")
        w.origin.endStalls()
        w.origin.clearRequests()
        let again = try await CLITests.run(args)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.hasSuffix("Downloads/film1/film1-v1.mkv\n"))
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv")) == data)
        for file in ["metadata.json", "Images/Primary.jpeg", "Images/Backdrop.jpeg"] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("Downloads/film1/\(file)").path), "\(file)")
        }
        let resumed = try #require(w.origin.requests.first { $0.path == "/Items/v1/Download" })
        #expect(resumed.status == 206 && resumed.range == "bytes=\(kept)-")
        let list = try await CLITests.run(["media", "list", "--root", root.path, "--json"])
        #expect(list.stdout.contains("\"versionId\" : \"v1\""))
        #expect(!list.stdout.contains("TOKEN-9"))
        let metadataSize = try Data(contentsOf: root.appendingPathComponent("Downloads/film1/metadata.json")).count
        let expectedSize = data.count + metadataSize + 2 * 4   // media, metadata, two 4-byte images
        #expect(try await CLITests.run(["media", "size", "--root", root.path, "film1"]).stdout == "\(expectedSize)\n")
        #expect(try await CLITests.run(["media", "remove", "--root", root.path, "film1"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("Downloads/film1").path))
    }

    /// An episode through the CLI: the season's backdrop (its own, else the series') and the
    /// season's own item in its metadata.json.
    @Test func anEpisodeBringsItsSeasonsArtAndItem() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        for dir in ["jellyfin/items", "jellyfin/media", "jellyfin/images"] {
            try FileManager.default.createDirectory(at: w.served.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        let items = [
            ("ser", #"{"Id":"ser","Type":"Series","Name":"Show"}"#),
            ("sa", #"{"Id":"sa","Type":"Season","Name":"Pilot Season","SeriesId":"ser","IndexNumber":1,"BackdropImageTags":["t"]}"#),
            ("sb", #"{"Id":"sb","Type":"Season","Name":"Season 2","SeriesId":"ser","IndexNumber":2}"#),
            ("e1", #"{"Id":"e1","Type":"Episode","SeriesId":"ser","SeasonId":"sa","ParentIndexNumber":1,"MediaSources":[{"Id":"m1","Container":"mp4"}]}"#),
            ("e2", #"{"Id":"e2","Type":"Episode","SeriesId":"ser","SeasonId":"sb","ParentIndexNumber":2,"MediaSources":[{"Id":"m2","Container":"mp4"}]}"#),
        ]
        for (id, json) in items { try Data(json.utf8).write(to: w.served.appendingPathComponent("jellyfin/items/\(id).json")) }
        for source in ["m1", "m2"] { _ = try w.serve("jellyfin/media/\(source)", size: 100_000) }
        for image in ["ser-Primary", "ser-Backdrop", "sa-Primary", "sa-Backdrop", "sb-Primary", "e1-Primary", "e2-Primary"] {
            try Data("jpeg:\(image)".utf8).write(to: w.served.appendingPathComponent("jellyfin/images/\(image).jpg"))
        }
        let root = w.base.appendingPathComponent("lib")
        for episode in ["e1", "e2"] {
            let run = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), episode])
            #expect(run.status == 0, "\(run.stderr)")
        }
        func text(_ path: String) -> String? { try? String(contentsOf: root.appendingPathComponent("Downloads/ser/" + path), encoding: .utf8) }
        #expect(text("Season-01/Images/Season-sa-Backdrop.jpeg") == "jpeg:sa-Backdrop")
        #expect(text("Season-02/Images/Season-sb-Backdrop.jpeg") == "jpeg:ser-Backdrop")
        #expect(!w.origin.requests.contains { $0.path == "/Items/sb/Images/Backdrop" })   // its item lists none: not asked
        let season = try JSONSerialization.jsonObject(with: Data((text("Season-01/metadata.json") ?? "").utf8)) as? [String: Any]
        #expect(season?["displayTitle"] as? String == "Pilot Season")
        #expect((season?["item"] as? [String: Any])?["Id"] as? String == "sa")
    }

    /// `courier media clean`: a killed download's partial that nothing owns any more (its
    /// job gone with a cancel's first step) and an orphaned incoming copy are deleted, the
    /// library's film stays, and the bytes reclaimed are said (text and JSON).
    @Test func cleanReclaimsWhatKillsLeft() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try jellyfin(w, mediaSize: 200_000)
        let root = w.base.appendingPathComponent("lib")
        let download = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1"])
        #expect(download.status == 0, "\(download.stderr)")
        let folder = root.appendingPathComponent("Downloads/film1")
        try Data(count: 123_456).write(to: folder.appendingPathComponent("film1-v2.mkv.partial"))
        try Data(count: 1_000).write(to: folder.appendingPathComponent("film1-v1.mkv.incoming"))
        let sizeBefore = try await CLITests.run(["media", "size", "--root", root.path]).stdout
        let clean = try await CLITests.run(["media", "clean", "--root", root.path, "--abandoned-after", "30d"])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.stdout.contains("removed Downloads/film1/film1-v2.mkv.partial\n") && clean.stdout.contains("removed Downloads/film1/film1-v1.mkv.incoming\n"))
        #expect(clean.stdout.hasSuffix("reclaimed 124456 bytes\n"))
        let sizeAfter = try await CLITests.run(["media", "size", "--root", root.path]).stdout
        #expect(Int64(sizeBefore.dropLast())! - Int64(sizeAfter.dropLast())! == 124_456)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("film1-v1.mkv").path))
        let again = try await CLITests.run(["media", "clean", "--root", root.path, "--json"])
        #expect(again.stdout.contains("\"reclaimedBytes\" : 0"))
        #expect(try await CLITests.run(["media", "clean", "--root", root.path, "--abandoned-after", "soon"]).status != 0)
    }

    /// Versions are independent downloads: version A killed midway, version B downloaded
    /// whole meanwhile, then A resumed with `Range: bytes=<kept>-`; both files are right and
    /// both are in metadata.json. (v1's `UNIQUE(mediaType, mediaId)` made B fail with
    /// E_DATABASE while A's record existed.)
    @Test func aKilledVersionDoesNotBlockAnotherAndResumesAfter() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        for dir in ["jellyfin/items", "jellyfin/media", "jellyfin/images"] {
            try FileManager.default.createDirectory(at: w.served.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        try Data(#"{"Id":"film2","Type":"Movie","Name":"Film","MediaSources":[{"Id":"va","Container":"mkv"},{"Id":"vb","Container":"mp4"}]}"#.utf8)
            .write(to: w.served.appendingPathComponent("jellyfin/items/film2.json"))
        let a = try w.serve("jellyfin/media/va", size: 12 << 20)
        let b = Data(a.prefix(3 << 20).reversed())
        try b.write(to: w.served.appendingPathComponent("jellyfin/media/vb"))
        var slow = Fault(); slow.bytesPerSecond = 4 << 20; slow.stallAfterBytes = 6 << 20   // the kill lands before the end
        w.origin.setFault(slow, for: "/Items/va/Download")
        let root = w.base.appendingPathComponent("lib")
        let base = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film2"]
        let (p, out, err) = try CLITests.launch(base + ["--version-id", "va"])
        let partial = root.appendingPathComponent("Downloads/film2/film2-va.mkv.partial")
        try await PartialFileSize.wait(partial, atLeast: 2 << 20)
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        let kept = PartialFileSize.of(partial)
        #expect(kept >= 2 << 20 && kept < a.count)

        let second = try await CLITests.run(base + ["--version-id", "vb"])
        #expect(second.status == 0, "\(second.stderr)")
        let bFile = root.appendingPathComponent("Downloads/film2/film2-vb.mp4")
        #expect((try? Data(contentsOf: bFile)) == b)
        #expect(PartialFileSize.of(partial) == kept)   // A's bytes untouched

        w.origin.setFault(nil, for: "/Items/va/Download")
        w.origin.endStalls()
        w.origin.clearRequests()
        let resumed = try await CLITests.run(base + ["--version-id", "va"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let aWhole = (try? Data(contentsOf: root.appendingPathComponent("Downloads/film2/film2-va.mkv"))) == a   // a Bool: no 12 MiB diff on failure
        #expect(aWhole)
        let first = try #require(w.origin.requests.first { $0.path == "/Items/va/Download" })
        #expect(first.status == 206 && first.range == "bytes=\(kept)-")
        let metadata = try String(contentsOf: root.appendingPathComponent("Downloads/film2/metadata.json"), encoding: .utf8)
        #expect(metadata.contains("\"va\"") && metadata.contains("\"vb\""))
    }

    @Test func hostileIdsAreRefusedAtTheCLI() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try jellyfin(w, mediaSize: 1000)
        let root = w.base.appendingPathComponent("lib")
        for id in ["../../etc", "a/b", ""] {
            let r = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), id])
            #expect(r.status == 64, "\(id.debugDescription): \(r.stderr)")
            #expect(r.stderr.contains("E_INVALID_PATH"))
        }
        let r = try await CLITests.run(["media", "remove", "--root", root.path, "../.."])
        #expect(r.status == 64)
        #expect(FileManager.default.fileExists(atPath: w.base.path))
    }

    @Test func openFollowsTheButtonRules() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("clip.mp4", size: 40_000)
        let target = w.out.appendingPathComponent("clip.mp4")
        let first = try await CLITests.run(["open", "clip", "--url", w.origin.url("/clip.mp4"), "-o", target.path, "--db", w.db])
        #expect(first.status == 0 && first.stderr.contains("Downloading clip"))
        #expect(try Data(contentsOf: target) == data)
        let second = try await CLITests.run(["open", "clip", "--db", w.db])
        #expect(second.status == 0 && second.stdout == target.path + "\n")   // rule 1: the path to open
        try FileManager.default.removeItem(at: target)
        let third = try await CLITests.run(["open", "clip", "--db", w.db])   // rule 2: missing → download
        #expect(third.status == 0 && third.stderr.contains("Downloading clip"))
        #expect(try Data(contentsOf: target) == data)
        #expect(try await CLITests.run(["open", "nothing", "--db", w.db]).status == 6)
    }

    /// `courier media open`: the DOWNLOAD button on a library version, through the CLI.
    @Test func mediaOpenFollowsTheButtonRulesOnVersions() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try jellyfin(w, mediaSize: 300_000)
        let root = w.base.appendingPathComponent("lib")
        let film = root.appendingPathComponent("Downloads/film1/film1-v1.mkv")
        let open = ["media", "open", "--root", root.path, "--server", w.origin.url("/"), "film1"]
        let first = try await CLITests.run(open + ["-q"])   // rule 5: nothing yet → download
        #expect(first.status == 0 && first.stderr.contains("Downloading film1/v1") && first.stdout == film.path + "\n", "\(first.stderr)")
        #expect(try Data(contentsOf: film) == data)
        w.origin.clearRequests()
        let second = try await CLITests.run(["media", "open", "--root", root.path, "film1"])   // rule 1: offline, no request
        #expect(second.status == 0 && second.stdout == film.path + "\n")
        #expect(w.origin.requests.isEmpty)
        try FileManager.default.removeItem(at: film)
        let third = try await CLITests.run(open + ["-q"])   // rule 2: listed but missing → cleaned up, downloaded
        #expect(third.status == 0 && third.stdout == film.path + "\n")
        #expect(try Data(contentsOf: film) == data)
        // Rule 4: in flight in another process → nothing is done.
        var slow = Fault(); slow.bytesPerSecond = 50_000; slow.stallAfterBytes = 150_000   // in flight until killed (named by a progress write before)
        w.origin.setFault(slow, for: "/Items/v1/Download")
        try FileManager.default.removeItem(at: film)
        let (p, out, err) = try CLITests.launch(open + ["-q"])
        try await PartialFileSize.wait(root.appendingPathComponent("Downloads/film1/film1-v1.mkv.partial"), atLeast: 1)
        let busy = try await CLITests.run(["media", "open", "--root", root.path, "film1"])
        #expect(busy.status == 0 && busy.stdout.contains("in flight"), "\(busy.stdout)\(busy.stderr)")
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
    }

    /// The download screen from the command line: a download started in one process is
    /// listed by `status --json`, paused from another process (the first stops with 130),
    /// resumed with `Range: bytes=<kept>-`, and a second one is cancelled, leaving nothing.
    @Test func statusPauseResumeCancelAcrossProcesses() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try jellyfin(w, mediaSize: 8 << 20)
        // Slow, then stalled half way: a pause (or cancel) from another process that a loaded
        // machine delays by seconds still finds the download running (it ended whole first).
        var slow = Fault(); slow.bytesPerSecond = 2 << 20; slow.stallAfterBytes = 4 << 20
        w.origin.setFault(slow, for: "/Items/v1/Download")
        let root = w.base.appendingPathComponent("lib")
        let (p, out, err) = try CLITests.launch(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1"])
        let partial = root.appendingPathComponent("Downloads/film1/film1-v1.mkv.partial")
        try await PartialFileSize.wait(partial, atLeast: 1 << 20)
        let status = try await CLITests.run(["media", "status", "--root", root.path, "--json"])
        #expect(status.status == 0 && status.stdout.contains("\"state\" : \"downloading\"") && status.stdout.contains("\"versionId\" : \"v1\""), "\(status.stdout)")
        let pause = try await CLITests.run(["media", "pause", "--root", root.path, "film1"])
        #expect(pause.status == 0 && pause.stdout == "Paused film1/v1.\n", "\(pause.stderr)")
        let first = await CLITests.finish(p, out, err)
        #expect(first.status == 130, "\(first.stderr)")
        #expect(try await CLITests.run(["media", "status", "--root", root.path]).stdout.contains("film1  v1  paused"))
        let kept = PartialFileSize.of(partial)
        #expect(kept > 0 && kept < data.count)

        w.origin.setFault(nil, for: "/Items/v1/Download")
        w.origin.clearRequests()
        let resume = try await CLITests.run(["media", "resume", "--root", root.path, "--server", w.origin.url("/"), "film1", "--quiet"])
        #expect(resume.status == 0 && resume.stdout.hasSuffix("Downloads/film1/film1-v1.mkv\n"), "\(resume.stderr)")
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.mkv")) == data)
        let resumed = try #require(w.origin.requests.first { $0.path == "/Items/v1/Download" })
        #expect(resumed.status == 206 && resumed.range == "bytes=\(kept)-")
        #expect(try await CLITests.run(["media", "status", "--root", root.path]).stdout == "Nothing in flight.\n")

        // Cancel: a second item, paused by cancel from another process; nothing stays.
        try Data(#"{"Id":"film2","Type":"Movie","Name":"Other","MediaSources":[{"Id":"v2","Container":"mp4"}]}"#.utf8)
            .write(to: w.served.appendingPathComponent("jellyfin/items/film2.json"))
        _ = try w.serve("jellyfin/media/v2", size: 8 << 20)
        w.origin.setFault(slow, for: "/Items/v2/Download")
        let (p2, out2, err2) = try CLITests.launch(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film2"])
        let partial2 = root.appendingPathComponent("Downloads/film2/film2-v2.mp4.partial")
        try await PartialFileSize.wait(partial2, atLeast: 1 << 20)
        let cancel = try await CLITests.run(["media", "cancel", "--root", root.path, "film2", "--version-id", "v2"])
        #expect(cancel.status == 0 && cancel.stdout == "Cancelled film2/v2.\n", "\(cancel.stderr)")
        let second = await CLITests.finish(p2, out2, err2)
        #expect(second.status == 130, "\(second.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("Downloads/film2").path))
        #expect(try await CLITests.run(["media", "cancel", "--root", root.path, "film2"]).status == 6)   // nothing left to cancel: E_NOT_FOUND
    }

    /// Subtitles through the CLI: `--subtitles all` fetches the text streams beside the
    /// media and lists them in metadata.json.
    @Test func subtitlesThroughTheCLI() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try jellyfin(w, mediaSize: 64 << 10)
        try Data(#"{"Id":"film1","Type":"Movie","Name":"Film","MediaSources":[{"Id":"v1","Container":"mkv","MediaStreams":[{"Index":3,"Type":"Subtitle","Codec":"srt","Language":"spa"}]}]}"#.utf8)
            .write(to: w.served.appendingPathComponent("jellyfin/items/film1.json"))
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("jellyfin/subtitles"), withIntermediateDirectories: true)
        let srt = Data("1\n00:00:01,000 --> 00:00:02,000\nHola.\n".utf8)
        try srt.write(to: w.served.appendingPathComponent("jellyfin/subtitles/v1-3.srt"))
        let root = w.base.appendingPathComponent("lib")
        let bad = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1", "--subtitles", "x"])
        #expect(bad.status == 64)
        let r = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1", "--subtitles", "all"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1.3.spa.srt")) == srt)
        let meta = try String(contentsOf: root.appendingPathComponent("Downloads/film1/metadata.json"), encoding: .utf8)
        #expect(meta.contains("\"fileName\" : \"film1-v1.3.spa.srt\""))
    }

    /// A transcoded download through the CLI: the seed's Static=false URL with the codecs
    /// and bitrate asked for; the file sits under its own version id.
    @Test func aTranscodedDownloadThroughTheCLI() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        _ = try jellyfin(w, mediaSize: 64 << 10)
        try FileManager.default.createDirectory(at: w.served.appendingPathComponent("jellyfin/transcoded"), withIntermediateDirectories: true)
        let small = try w.serve("jellyfin/transcoded/v1.mp4", size: 40_000)
        let root = w.base.appendingPathComponent("lib")
        let r = try await CLITests.run(["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1", "--transcode", "--video-codec", "hevc", "--max-bitrate", "1500000"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("Downloads/film1/film1-v1-t-mp4-hevc-aac-1500k.mp4\n"))
        #expect(try Data(contentsOf: root.appendingPathComponent("Downloads/film1/film1-v1-t-mp4-hevc-aac-1500k.mp4")) == small)
        let query = try #require(w.origin.requests.first { $0.path == "/Items/v1/Download" }?.query)
        for part in ["Static=false", "Container=mp4", "VideoCodec=hevc", "MaxStreamingBitrate=1500000"] { #expect(query.contains(part), "\(query)") }
        let list = try await CLITests.run(["media", "list", "--root", root.path, "--json"])
        #expect(list.stdout.contains("\"isStatic\" : false") && list.stdout.contains("\"videoCodec\" : \"hevc\""))
    }
}
