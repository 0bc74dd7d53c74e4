import CourierCore
import CourierOrigin
import CourierTestSupport
import Foundation
import Testing
@testable import CourierURLSession

/// Issue 48: the adapter of URLSession's own resumable upload, run over FoundationNetworking,
/// where it is a plain upload with no blob (the blob's calls are Apple's only): the file goes
/// in one task, the server's final status comes back with the bytes sent, and a stop ends it
/// as interrupted. What only Apple's URLSession does is type-checked, not run.
@Suite struct URLSessionResumableUploadsTests {
    @Test func theFileGoesInOneTaskAndTheFinalStatusComesBack() async throws {
        let dir = temporaryFolder("courier-ru")
        defer { try? FileManager.default.removeItem(at: dir) }   // best effort: a temporary folder
        let origin = try await CourierOrigin.start(directory: dir.appendingPathComponent("served"), writable: true)
        let file = dir.appendingPathComponent("clip.bin")
        try Data(count: 300_000).write(to: file)
        let uploads = URLSessionResumableUploads()
        let heard = Locked<[SystemUploadEvent]>([])
        let outcome = await uploads.upload(file, to: URL(string: "http://127.0.0.1:\(origin.port)/up/clip.bin")!, headers: [("X-Test", "1")],
                                           resumeData: nil) { event in heard.withLock { $0.append(event) } }
        guard case let .finished(status) = outcome else { Issue.record("\(outcome)"); return }
        #expect(status == 405, "the origin takes PUT only: its refusal is the final status")
        #expect(origin.requests.contains { $0.method == "POST" && $0.path == "/up/clip.bin" }, "\(origin.requests.map(\.method))")

        // A stop before the task began: interrupted, no blob (FoundationNetworking has none).
        let stopped = Task {
            while !Task.isCancelled { await Task.yield() }   // the upload starts only once stopped
            return await uploads.upload(file, to: URL(string: "http://127.0.0.1:\(origin.port)/up/clip.bin")!, headers: [], resumeData: nil) { _ in }
        }
        stopped.cancel()
        guard case let .interrupted(error, blob) = await stopped.value else { Issue.record("not interrupted"); return }
        #expect(error.code == .cancelled && blob == nil, "\(error)")

        // A blob: none can be used here.
        guard case .interrupted(_, nil) = await uploads.upload(file, to: URL(string: "http://127.0.0.1:\(origin.port)/x")!, headers: [],
                                                              resumeData: Data("blob".utf8), events: { _ in }) else { Issue.record("a blob was used"); return }
        try await origin.stop()
    }
}
