import Courier
import CourierTestSupport
import Foundation
import Testing
@testable import CourierAttachments

/// tus 1.0 uploads against a real tus server (aiohttp-tus, `scripts/tus-server`): a stopped
/// upload goes on from the server's offset, measured in the server's own log; a changed file
/// or a vanished upload starts again; every chunk carries its SHA-1.
@Suite(.enabled(if: TusServer.shared.isAvailable, "needs aiohttp-tus (pip install aiohttp-tus)"))
struct TusUploadTests {
    private let chunk: Int64 = 1 << 20

    private func journal(_ dir: URL, progress: (@Sendable (UploadProgress) -> Void)? = nil) throws -> UploadJournal {
        UploadJournal(database: try CourierDatabase(path: dir.appendingPathComponent("uploads.sqlite").path), id: "put:1", progress: progress)
    }

    private func uploader() throws -> TusUploader { try TusUploader(endpoint: TusServer.shared.endpoint, chunkSize: chunk, transport: testTransport()) }

    /// Uploads until `stopAt` bytes are confirmed, then stops (the record stays as the last commit left it).
    private func uploadUntil(_ stopAt: Int64, _ file: URL, name: String, _ dir: URL) async throws {
        let (reached, mark) = AsyncStream<Void>.makeStream()
        let u = try uploader()
        let task = Task {
            defer { mark.finish() }   // an upload that ends short of the mark ends the wait too
            _ = try await u.upload(file, metadata: ["filename": name], journal: try journal(dir) { p in
                if p.confirmedBytes >= stopAt { mark.yield() }
            })
        }
        for await _ in reached { break }
        task.cancel()
        _ = await task.result
        try await u.shutdown()
    }

    private func served(_ name: String) -> Data? { try? Data(contentsOf: TusServer.shared.directory!.appendingPathComponent(name)) }

    @Test func aStoppedUploadGoesOnFromTheServersOffset() async throws {
        let dir = temporaryFolder("courier-tus-up")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files (up to 512 MiB) go with it
        let name = "clip-\(UUID().uuidString.prefix(6)).bin"
        let data = pseudoRandom(Int(chunk) * 20 + 777, seed: 9)
        let file = dir.appendingPathComponent(name)
        try data.write(to: file)
        try await uploadUntil(chunk * 8, file, name: name, dir)
        let kept = try #require(try await journal(dir).database.upload(id: "put:1"))
        let url = try #require(kept.record.remoteId)
        let confirmedAtStop = kept.record.confirmedBytes
        #expect(confirmedAtStop >= chunk * 8 && served(name) == nil)
        let patchesBefore = TusServer.shared.patches(of: url).count

        let u = try uploader()
        let done = try await u.upload(file, metadata: ["filename": name], journal: try journal(dir))
        try await u.shutdown()
        #expect(done.absoluteString == url, "the same upload goes on")
        #expect(served(name) == data)
        #expect(try await journal(dir).database.upload(id: "put:1") == nil)
        // From the server's side: the resumed run began at or after the offset confirmed at
        // the stop, and nothing the server had confirmed came again.
        let patches = TusServer.shared.patches(of: url)
        let resumed = patches[patchesBefore...]
        #expect(resumed.first.map { $0.offset >= confirmedAtStop } == true, "\(patches)")
        #expect(patches.filter { $0.status == 204 }.reduce(0) { $0 + $1.received } == Int64(data.count))
        #expect(patches.reduce(0) { $0 + $1.received } <= Int64(data.count) + chunk, "at most the chunk in flight went twice")
        #expect(patches.allSatisfy { $0.checksum }, "every chunk carries its SHA-1: the server offers the checksum extension")
    }

    @Test func aChangedFileIsUploadedWholeNeverMixed() async throws {
        let dir = temporaryFolder("courier-tus-ch")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files (up to 512 MiB) go with it
        let name = "doc-\(UUID().uuidString.prefix(6)).bin"
        let file = dir.appendingPathComponent(name)
        let old = pseudoRandom(Int(chunk) * 6, seed: 1)
        try old.write(to: file)
        try await uploadUntil(chunk * 2, file, name: name, dir)
        let oldURL = try #require(try await journal(dir).database.upload(id: "put:1")?.record.remoteId)
        let mtime = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as! Date
        let new = pseudoRandom(old.count, seed: 2)
        try new.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: file.path)   // only the hash of what was sent tells

        let u = try uploader()
        let url = try await u.upload(file, metadata: ["filename": name], journal: try journal(dir))
        try await u.shutdown()
        #expect(url.absoluteString != oldURL)
        #expect(served(name) == new)
    }

    @Test func anUploadTheServerLostIsCreatedAgain() async throws {
        let dir = temporaryFolder("courier-tus-gone")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files (up to 512 MiB) go with it
        let name = "gone-\(UUID().uuidString.prefix(6)).bin"
        let file = dir.appendingPathComponent(name)
        let data = pseudoRandom(Int(chunk) * 4 + 5, seed: 3)
        try data.write(to: file)
        try await uploadUntil(chunk, file, name: name, dir)
        let oldURL = try #require(try await journal(dir).database.upload(id: "put:1")?.record.remoteId)
        let u = try uploader()
        await u.terminate(URL(string: oldURL)!)
        let url = try await u.upload(file, metadata: ["filename": name], journal: try journal(dir))
        try await u.shutdown()
        #expect(url.absoluteString != oldURL && served(name) == data)
    }

    @Test func anEmptyFileAndAOneChunkFile() async throws {
        for size in [0, 10] {
            let dir = temporaryFolder("courier-tus-small")
            defer { try? FileManager.default.removeItem(at: dir) }   // the test's files (up to 512 MiB) go with it
            let name = "small-\(size)-\(UUID().uuidString.prefix(6)).bin"
            let file = dir.appendingPathComponent(name)
            try pseudoRandom(size, seed: 4).write(to: file)
            let u = try uploader()
            _ = try await u.upload(file, metadata: ["filename": name], journal: try journal(dir))
            try await u.shutdown()
            #expect(served(name)?.count == size || size == 0)
        }
    }
}
