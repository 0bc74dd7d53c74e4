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
        let server = try JellyfinServer(baseURL: "http://127.0.0.1:9", token: "T", transport: testTransport())
        #expect(await errorCode { _ = try await server.item(id: "movie1") } == "E_CONNECTION_REFUSED")
        #expect(await errorCode { _ = try await server.item(id: "../etc") }?.hasPrefix("E_INVALID") == true)
        let lib = try MediaLibrary(root: base.appendingPathComponent("root"), server: server,
                                   database: try CourierDatabase(path: base.appendingPathComponent("db.sqlite").path), transport: testTransport())
        #expect(await errorCode { _ = try await lib.download(itemId: "movie1") } == "E_CONNECTION_REFUSED")
        #expect(await errorCode { try await lib.remove(itemId: "nothing") } == "E_NOT_FOUND")
        #expect(await errorCode { _ = try lib.size(itemId: "../x") }?.hasPrefix("E_INVALID") == true)
        await lib.shutdown()
        #expect(await errorCode { try await server.shutdown() } == nil)
    }

    /// An item of a kind Courier does not model (`BoxSet`) is read, kept as sent, and
    /// refused for download with a code, not a decoding failure.
    @Test func anItemOfAnotherKindIsRefusedWithACode() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        try w.addItem("box1", #"{"Id":"box1","Type":"BoxSet","Name":"Collection","ChildCount":3}"#)
        let item = try await w.library.mediaServer.item(id: "box1")
        #expect(item.type.rawValue == "BoxSet" && item[field: "ChildCount"] == .integer(3))
        let encoded = String(decoding: try JSONEncoder().encode(item), as: UTF8.self)
        #expect(encoded.contains("\"Type\":\"BoxSet\""))
        #expect(await errorCode { _ = try await w.library.download(itemId: "box1") } == "E_INVALID_ARGUMENT")
        #expect(await errorCode { _ = try MediaLayout.itemFolder(item) } == "E_INVALID_ARGUMENT")
    }
}
