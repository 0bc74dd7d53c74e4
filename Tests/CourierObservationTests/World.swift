import Courier
import CourierOrigin
import CourierTestSupport
import Foundation

/// A served folder on a live origin, a root directory and a database file, for one test.
final class World: @unchecked Sendable {   // used from one test at a time
    let base = temporaryFolder("courier-observation")
    var served: URL { base.appendingPathComponent("served") }
    var root: URL { base.appendingPathComponent("root") }
    var dbPath: String { base.appendingPathComponent("courier.sqlite").path }
    let origin: CourierOrigin

    init() async throws {
        try FileManager.default.createDirectory(at: base.appendingPathComponent("served"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: base.appendingPathComponent("root"), withIntermediateDirectories: true)
        origin = try await CourierOrigin.start(directory: base.appendingPathComponent("served"))
    }

    func close() async {
        try? await origin.stop()
        try? FileManager.default.removeItem(at: base)
    }

    @discardableResult
    func serve(_ name: String, size: Int, seed: UInt64 = 7) throws -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var words = [UInt64](repeating: 0, count: size / 8 + 1)
        for i in words.indices { state ^= state << 13; state ^= state >> 7; state ^= state << 17; words[i] = state }
        let data = words.withUnsafeBytes { Data($0.prefix(size)) }
        try data.write(to: served.appendingPathComponent(name))
        return data
    }

    func url(_ name: String) -> String { origin.url("/" + name) }

    func downloader(_ change: (inout DownloaderConfiguration) -> Void = { _ in }) throws -> Downloader {
        var c = DownloaderConfiguration(rootDirectory: root)
        c.freeSpaceReserve = 0
        change(&c)
        return Downloader(configuration: c, database: try CourierDatabase(path: dbPath), transportOrDefault: testTransport())
    }
}
