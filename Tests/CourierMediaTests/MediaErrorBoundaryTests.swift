import CourierTestSupport
import Courier
import Foundation
import Testing
@testable import CourierMedia

/// Nothing but `CourierError` leaves the media target's public API.
@Suite struct MediaErrorBoundaryTests {
    @Test func aDeadServerAndBadInputAreCourierErrors() async throws {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("media-err-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        // Port 9 (discard) on loopback: nothing listens there in a test machine.
        let server = try JellyfinServer(baseURL: "http://127.0.0.1:9", token: "T")
        #expect(await errorCode { _ = try await server.item(id: "movie1") } == "E_CONNECTION_REFUSED")
        #expect(await errorCode { _ = try await server.item(id: "../etc") }?.hasPrefix("E_INVALID") == true)
        let lib = try MediaLibrary(root: base.appendingPathComponent("root"), server: server,
                                   database: try CourierDatabase(path: base.appendingPathComponent("db.sqlite").path))
        #expect(await errorCode { _ = try await lib.download(itemId: "movie1") } == "E_CONNECTION_REFUSED")
        #expect(await errorCode { try await lib.remove(itemId: "nothing") } == "E_NOT_FOUND")
        #expect(await errorCode { _ = try lib.size(itemId: "../x") }?.hasPrefix("E_INVALID") == true)
        await lib.shutdown()
        #expect(await errorCode { try await server.shutdown() } == nil)
    }
}
