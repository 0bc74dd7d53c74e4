import Courier
import CourierTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import CourierAttachments

/// Uploads stream each part from the file (issue 30): the transport is handed a byte range of
/// the file, never the part's bytes, and a file written between the digest pass and the
/// send is never completed as a mix.
@Suite(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server (pip install 'moto[server]')"))
struct UploadStreamingTests {
    private let partSize: Int64 = 5 << 20

    private func storage(_ transport: any HTTPTransport, concurrency: Int = 2) async throws -> S3RemoteStorage {
        var c = S3Configuration(bucket: "courier-st-\(UUID().uuidString.prefix(8).lowercased())", prefix: "up/",
                                endpoint: MotoServer.shared.endpoint!, accessKeyID: "testing", secretAccessKey: "testing")
        c.multipartThreshold = partSize
        c.partSize = partSize
        c.uploadConcurrency = concurrency
        let s = S3RemoteStorage(configuration: c, transport: transport)
        try await s.createBucketIfNeeded()
        return s
    }

    private func journal(_ dir: URL) throws -> UploadJournal {
        UploadJournal(database: try CourierDatabase(path: dir.appendingPathComponent("uploads.sqlite").path), id: "attachment:a1")
    }

    @Test func everyPartGoesFromTheFileNeverFromMemory() async throws {
        let dir = temporaryFolder("courier-stream-up")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files go with it
        let transport = BodyWatcher()
        let s = try await storage(transport)
        let file = dir.appendingPathComponent("clip.bin")
        let data = pseudoRandom(Int(partSize) * 3 + 1234, seed: 30)
        try data.write(to: file)
        let attachment = Attachment(id: "a1", filename: "clip.bin", state: .queuedUpload)
        try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir))
        let out = dir.appendingPathComponent("got.bin")
        try await s.download(attachment, to: out)
        #expect(try Data(contentsOf: out) == data)
        let parts = transport.seen.withLock { $0 }.filter { $0.query.contains("partNumber=") }
        #expect(parts.count == 4, "\(parts)")
        #expect(parts.allSatisfy { $0.fromFile == file.standardizedFileURL.path }, "\(parts)")
        #expect(parts.map(\.length).sorted() == [1234, partSize, partSize, partSize])
        try await s.shutdown()
    }

    /// The file is rewritten (same size) as its first part is about to go: the part's digests
    /// are the old bytes', the body the new ones. The upload starts again from the new file
    /// (its modification time moved) and the object is exactly the new file; when the
    /// rewrite also puts the old time back, the part is refused for its digests and the
    /// upload fails with a code. Neither completes a mix.
    @Test(arguments: [false, true]) func aFileWrittenAsAPartGoesIsNeverCompletedMixed(keepTime: Bool) async throws {
        let dir = temporaryFolder("courier-stream-up")
        defer { try? FileManager.default.removeItem(at: dir) }   // the test's files go with it
        let file = dir.appendingPathComponent("clip.bin")
        let old = pseudoRandom(Int(partSize) * 2, seed: 31), new = pseudoRandom(Int(partSize) * 2, seed: 32)
        try old.write(to: file)
        let transport = BodyWatcher(beforeFirstPart: {
            var before = stat()
            _ = stat(file.path, &before)
            try new.write(to: file)
            // The old time to the nanosecond: only the digests can tell the bytes apart.
            #if canImport(Darwin)
            let times = [before.st_atimespec, before.st_mtimespec]
            #else
            let times = [before.st_atim, before.st_mtim]
            #endif
            if keepTime { #expect(utimensat(AT_FDCWD, file.path, times, 0) == 0) }
        })
        // One part at a time: the second part's digest pass never races the rewrite.
        let s = try await storage(transport, concurrency: 1)
        let attachment = Attachment(id: "a1", filename: "clip.bin", state: .queuedUpload)
        let out = dir.appendingPathComponent("got.bin")
        if keepTime {
            await #expect { try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir)) } throws: { error in
                let code = (error as? CourierError)?.code
                return code == .checksumMismatch || code == .remoteStorage
            }
            await #expect(throws: CourierError.self) { try await s.download(attachment, to: out) }

        } else {
            try await s.upload(fileAt: file, attachment: attachment, journal: try journal(dir))
            try await s.download(attachment, to: out)
            #expect(try Data(contentsOf: out) == new)
        }
        try await s.shutdown()
    }
}

/// A transport that notes each request's body (a file's range or bytes), and can run
/// something just before the first part goes.
final class BodyWatcher: HTTPTransport {
    struct Seen: Sendable { let query: String; let fromFile: String?; let length: Int64 }
    let inner: any HTTPTransport = testTransport() ?? AsyncHTTPClientTransport()
    let seen = Locked<[Seen]>([])
    let beforeFirstPart: Locked<(@Sendable () throws -> Void)?>

    init(beforeFirstPart: (@Sendable () throws -> Void)? = nil) { self.beforeFirstPart = Locked(beforeFirstPart) }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let query = URLComponents(string: request.url)?.query ?? ""
        var file: String?
        if case let .file(url, _, _) = request.body { file = url.standardizedFileURL.path }
        seen.withLock { $0.append(Seen(query: query, fromFile: file, length: request.body?.length ?? 0)) }
        if query.contains("partNumber=") {
            let hook = beforeFirstPart.withLock { hook in defer { hook = nil }; return hook }
            try hook?()
        }
        return try await inner.send(request)
    }
    func shutdown() async throws { try await inner.shutdown() }
    var pacesWithinBodies: Bool { inner.pacesWithinBodies }
}
