import Courier
import Foundation
import Testing
@testable import CourierMedia

@Suite(.serialized) struct LegacyAndDiscoveryTests {
    func fixture(_ w: MediaWorld, _ folder: String, item json: String, media: String, images: [String] = []) throws {
        let dir = w.root.appendingPathComponent("Downloads/\(folder)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("Metadata"), withIntermediateDirectories: true)
        try Data(json.utf8).write(to: dir.appendingPathComponent("Metadata/Item.json"))
        try Data("legacy media \(folder)".utf8).write(to: dir.appendingPathComponent(media))
        if !images.isEmpty { try FileManager.default.createDirectory(at: dir.appendingPathComponent("Images"), withIntermediateDirectories: true) }
        for image in images { try Data("img".utf8).write(to: dir.appendingPathComponent("Images/\(image)")) }
    }

    @Test func legacyItemsAreFoundThenMigrated() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try fixture(w, "oldmovie", item: #"{"Id":"oldmovie","Type":"Movie","Name":"Old"}"#, media: "Media.mp4", images: ["Primary.jpeg"])
        try fixture(w, "oldep", item: #"{"Id":"oldep","Type":"Episode","SeriesId":"oldseries","SeasonId":"os1","ParentIndexNumber":3}"#,
                    media: "Media.mkv", images: ["Primary.jpeg", "Backdrop.jpeg"])
        // Found before migration: Metadata/Item.json plus Media.*.
        #expect(w.library.isItemVersionDownloaded(itemId: "oldmovie", mediaSourceId: nil))
        #expect(w.library.isItemVersionDownloaded(itemId: "oldep", mediaSourceId: nil))

        #expect(try await w.library.migrate() == ["oldep", "oldmovie"])
        #expect(w.tree() == [
            "oldmovie/Images/Primary.jpeg",
            "oldmovie/metadata.json",
            "oldmovie/oldmovie-oldmovie.mp4",
            "oldseries/Season-03/Images/Episode-oldep-Backdrop.jpeg",
            "oldseries/Season-03/Images/Episode-oldep-Primary.jpeg",
            "oldseries/Season-03/metadata.json",
            "oldseries/Season-03/oldep-oldep.mkv",
            "oldseries/metadata.json",
        ])
        #expect(try w.metadata("oldmovie/metadata.json").versions.map(\.versionId) == ["oldmovie"])
        #expect(try w.metadata("oldseries/Season-03/metadata.json").versions.map(\.itemId) == ["oldep"])
        #expect(w.library.isItemVersionDownloaded(itemId: "oldmovie", mediaSourceId: nil))
        #expect(w.library.isItemVersionDownloaded(itemId: "oldep", mediaSourceId: "oldep"))
        #expect(try await w.library.migrate().isEmpty)   // idempotent
    }

    @Test func discoveryOrder() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let d = MediaDiscovery(root: w.root)
        let movie = w.root.appendingPathComponent("Downloads/m1")
        let season = w.root.appendingPathComponent("Downloads/s1/Season-01")
        try FileManager.default.createDirectory(at: movie, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: season.appendingPathComponent("Images"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: w.root.appendingPathComponent("Downloads/s1/Images"), withIntermediateDirectories: true)
        for file in ["m1-v1.mp4", "m1-v2.mkv"] { try Data("x".utf8).write(to: movie.appendingPathComponent(file)) }
        try Data("x".utf8).write(to: season.appendingPathComponent("e1-e1.mp4"))
        #expect(d.mediaFile(itemId: "m1", mediaSourceId: "v2")?.lastPathComponent == "m1-v2.mkv")     // version-specific
        #expect(d.mediaFile(itemId: "m1", mediaSourceId: nil)?.lastPathComponent == "m1-v1.mp4")      // item-based
        #expect(d.mediaFile(itemId: "m1", mediaSourceId: "v9")?.lastPathComponent == "m1-v1.mp4")     // the seed: a version's miss falls back to the item
        #expect(d.mediaFile(itemId: "m1", mediaSourceId: "v9", exact: true) == nil)                     // whether v9 itself is there: no
        #expect(d.mediaFile(itemId: "e1", mediaSourceId: nil)?.lastPathComponent == "e1-e1.mp4")      // recursive, in a season
        try FileManager.default.createDirectory(at: w.root.appendingPathComponent("Downloads/old"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: w.root.appendingPathComponent("Downloads/old/Media.avi"))
        #expect(d.mediaFile(itemId: "old", mediaSourceId: nil)?.lastPathComponent == "Media.avi")     // legacy Media.*
        // Images: season first, then series.
        try Data("x".utf8).write(to: w.root.appendingPathComponent("Downloads/s1/Images/Series-s1-Primary.jpeg"))
        #expect(d.image(seriesFolder: w.root.appendingPathComponent("Downloads/s1"), seasonFolder: season, prefix: "Season-x-", kind: .primary) == nil)
        #expect(d.image(seriesFolder: w.root.appendingPathComponent("Downloads/s1"), seasonFolder: season, prefix: "Series-s1-", kind: .primary)?.lastPathComponent == "Series-s1-Primary.jpeg")
        try Data("x".utf8).write(to: season.appendingPathComponent("Images/Series-s1-Primary.png"))
        #expect(d.image(seriesFolder: w.root.appendingPathComponent("Downloads/s1"), seasonFolder: season, prefix: "Series-s1-", kind: .primary)?.lastPathComponent == "Series-s1-Primary.png")
        // Removing a version cleans its file and entry.
        try await w.library.download(itemId: "abc123")
        try await w.library.download(itemId: "abc123", versionId: "ghi789")
        try await w.library.remove(itemId: "abc123", versionId: "def456")
        #expect(!w.tree().contains("abc123/abc123-def456.mp4") && w.tree().contains("abc123/abc123-ghi789.mkv"))
        #expect(try w.metadata("abc123/metadata.json").versions.map(\.versionId) == ["ghi789"])
    }
}
