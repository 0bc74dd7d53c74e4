import Courier
import CourierTestSupport
import CourierAttachments
import Foundation
import Testing
@testable import CourierDocuments

/// A write's upload retries by the engine's rules and gives up: never an endless loop, and
/// the document says the upload failed, with a code.
@Suite struct UploadRetryTests {
    @Test func anUploadToADeadServerGivesUpAndSaysSo() async throws {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("upload-retry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }   // test cleanup
        // Port 9 on loopback: nothing listens there.
        let storage = try HTTPRemoteStorage(baseURL: "http://127.0.0.1:9/files", transport: testTransport())
        let mirror = try MirrorContainer(root: base.appendingPathComponent("local"), storage: storage,
                                         database: try CourierDatabase(path: base.appendingPathComponent("c.sqlite").path), configure: {
            $0.retryPolicy = RetryPolicy(baseDelay: .milliseconds(10), maxDelay: .milliseconds(50), maxAttempts: 4)
        }, transport: testTransport())
        try await mirror.coordinatedWrite("notes.txt", data: Data("hello".utf8))
        await mirror.flushUploads()   // returns: the loop is bounded
        // The local write stands; the upload's failure is the document's state.
        #expect(try Data(contentsOf: base.appendingPathComponent("local/notes.txt")) == Data("hello".utf8))
        let state = await mirror.state(of: "notes.txt")
        #expect(state.status == .current)
        guard let error = state.uploadFailure else { Issue.record("\(state)"); return }
        #expect(error.code == .connectionRefused && error.message.contains("upload failed"))
        await mirror.shutdown()
        try await storage.shutdown()
    }
}
