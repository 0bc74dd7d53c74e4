import Courier
import CourierDownloadsModel
import CourierObservation
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing

/// The example app's model (Examples/CourierDownloads), on Linux: DOWNLOAD follows the
/// seven rules, the list follows each download, the app's own row is written with the
/// completion, and a second launch shows what the first left.
@Suite(.serialized) struct ExampleModelTests {
    @MainActor
    @Test func downloadOpenInProgressAndTheAppsRow() async throws {
        let w = try await World()
        defer { Task { await w.close() } }
        let film = try w.serve("film.bin", size: 2 << 20)
        try w.serve("slow.bin", size: 8 << 20)
        var stall = Fault(); stall.stallAfterBytes = 1 << 20; stall.times = 10
        w.origin.setFault(stall, for: "/slow.bin")
        let catalog = [CatalogEntry(name: "film.bin", title: "Film", url: w.url("film.bin")),
                       CatalogEntry(name: "slow.bin", title: "Slow", url: w.url("slow.bin"))]
        let app = w.base.appendingPathComponent("app")
        let transfers = try Transfers(folder: app, catalog: catalog, backgroundSessionIdentifier: nil)
        try await transfers.launch()
        #expect(transfers.detail(of: transfers.list.item(id: catalog[0].id)) == "Not downloaded")

        #expect(await transfers.press(catalog[0]) == .started)                       // rule 5
        #expect(try await until { transfers.list.item(id: catalog[0].id)?.phase == .completed },
                "\(transfers.detail(of: transfers.list.item(id: catalog[0].id)))")
        #expect(try transfers.localPath(of: catalog[0]) == "Catalog/film.bin")      // written with the completion
        let file = app.appendingPathComponent("Downloads/Catalog/film.bin")
        #expect(try Data(contentsOf: file) == film)
        #expect(await transfers.press(catalog[0]) == .opened(file))                   // rule 1
        #expect(transfers.detail(of: transfers.list.item(id: catalog[0].id)) == "Downloaded")

        #expect(await transfers.press(catalog[1]) == .started)
        #expect(try await until { (transfers.list.item(id: catalog[1].id)?.bytesReceived ?? 0) >= 256 << 10 })
        #expect(await transfers.press(catalog[1]) == .alreadyRunning)                 // rule 4
        #expect(try transfers.localPath(of: catalog[1]) == nil)
        let slow = try #require(transfers.list.item(id: catalog[1].id))
        try await slow.pause()
        #expect(try await until { slow.phase == .paused })
        #expect(transfers.detail(of: slow) == "Paused")
        await transfers.downloader.shutdown()
        transfers.list.stop()

        // The next launch shows the paused bar where it was, before anything runs.
        let again = try Transfers(folder: app, catalog: catalog, backgroundSessionIdentifier: nil)
        #expect(try await until { again.list.item(id: catalog[1].id) != nil })
        let kept = try #require(again.list.item(id: catalog[1].id))
        #expect(kept.phase == .paused && kept.bytesReceived >= 256 << 10)
        try await kept.cancel()
        #expect(try await until { again.list.item(id: catalog[1].id) == nil })
        await again.downloader.shutdown()
    }
}
