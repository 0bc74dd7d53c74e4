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
        var slow = Fault(); slow.bytesPerSecond = 4 << 20
        w.origin.setFault(slow, for: "/Items/v1/Download")
        let root = w.base.appendingPathComponent("lib")
        let args = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film1"]
        setenv("JELLYFIN_TOKEN", "TOKEN-9", 1)
        defer { unsetenv("JELLYFIN_TOKEN") }
        let (p, out, err) = try CLITests.launch(args)
        let partial = root.appendingPathComponent("Downloads/film1/film1-v1.mkv.partial")
        let deadline = ContinuousClock.now + .seconds(30)
        while PartialFileSize.of(partial) < 3 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        kill(p.processIdentifier, SIGKILL)
        _ = await CLITests.finish(p, out, err)
        let kept = PartialFileSize.of(partial)
        #expect(kept >= 3 << 20 && kept < data.count)

        w.origin.setFault(nil, for: "/Items/v1/Download")
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
        var slow = Fault(); slow.bytesPerSecond = 4 << 20
        w.origin.setFault(slow, for: "/Items/va/Download")
        let root = w.base.appendingPathComponent("lib")
        let base = ["media", "download", "--root", root.path, "--server", w.origin.url("/"), "film2"]
        let (p, out, err) = try CLITests.launch(base + ["--version-id", "va"])
        let partial = root.appendingPathComponent("Downloads/film2/film2-va.mkv.partial")
        let deadline = ContinuousClock.now + .seconds(30)
        while PartialFileSize.of(partial) < 2 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
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
}
