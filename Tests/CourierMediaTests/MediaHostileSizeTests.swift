import CourierTestSupport
import Courier
import Foundation
import Testing
@_spi(Testing) @testable import CourierMedia

/// A media server's `Size` is its word: one no file can have (Int64's extremes, negative)
/// announces nothing. It overflowed the free-space sum before (a crash, not an error):
/// Int64.max always, Int64.min once a partial file was there (`size - held`).
@Suite struct MediaHostileSizeTests {
    @Test(arguments: [(Int64.max, false), (Int64.min, true), (-1, true)] as [(Int64, Bool)])
    func anAbsurdSizeAnnouncesNothing(size: Int64, withPartial: Bool) async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("film7", #"{"Id":"film7","Type":"Movie","Name":"Huge","MediaSources":[{"Id":"s7","Container":"mp4","Size":"# + "\(size)" + "}]}")
        let data = try w.addFile("s7", size: 1 << 20)
        if withPartial {   // a first run's bytes, as a kill leaves them: the next run resumes from them
            let partial = w.root.appendingPathComponent("Downloads/film7/film7-s7.mp4.partial")
            try FileManager.default.createDirectory(at: partial.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.prefix(4096).write(to: partial)
        }
        let version = try await w.library.start(itemId: "film7")
        let report = try await w.library.completion(of: version)
        #expect(w.file(report.mediaPath) == data)
    }
}
