import CourierTestSupport
import Courier
import Foundation
import Testing
@_spi(Testing) @testable import CourierMedia

/// A media server's `Size` is its word: one no file can have (Int64's extremes, negative)
/// announces nothing. It overflowed the free-space sum before (a crash, not an error).
@Suite struct MediaHostileSizeTests {
    @Test(arguments: [Int64.max, Int64.min, -1]) func anAbsurdSizeAnnouncesNothing(size: Int64) async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("film7", #"{"Id":"film7","Type":"Movie","Name":"Huge","MediaSources":[{"Id":"s7","Container":"mp4","Size":"# + "\(size)" + "}]}")
        let data = try w.addFile("s7", size: 1 << 20)
        let version = try await w.library.start(itemId: "film7")
        let report = try await w.library.completion(of: version)
        #expect(w.file(report.mediaPath) == data)
    }
}
