import CourierTestSupport
import Courier
import Foundation
import Testing
@testable import CourierAttachments

/// Uploads under a precondition: the compare-and-swap mirrored documents rely on, against
/// a real S3 API (moto) and a local folder.
@Suite struct ConditionalUploadTests {
    static func check(_ storage: any ConditionalRemoteStorage, file: URL, other: URL) async throws {
        let doc = Attachment(id: "d", filename: "docs/d-\(UUID().uuidString.prefix(6)).txt", state: .queuedUpload)
        #expect(try await storage.version(of: doc) == nil)
        let first = try await storage.upload(fileAt: file, attachment: doc, precondition: .absent)
        let v1 = try #require(first)
        #expect(try await storage.version(of: doc) == v1)
        // Created elsewhere meanwhile: a create must not overwrite it.
        #expect(await errorCode { _ = try await storage.upload(fileAt: other, attachment: doc, precondition: .absent) } == "E_CONFLICT")
        // Based on the current version: accepted, and a new version.
        let second = try await storage.upload(fileAt: other, attachment: doc, precondition: .matches(v1))
        let v2 = try #require(second)
        #expect(v2 != v1)
        // Based on the old one: refused, nothing overwritten.
        #expect(await errorCode { _ = try await storage.upload(fileAt: file, attachment: doc, precondition: .matches(v1)) } == "E_CONFLICT")
        let back = file.deletingLastPathComponent().appendingPathComponent("back-\(UUID().uuidString)")
        try await storage.download(doc, to: back)
        #expect(try Data(contentsOf: back) == Data(contentsOf: other))
        _ = try await storage.upload(fileAt: file, attachment: doc, precondition: .none)   // unconditional still works
    }

    static func files() throws -> (URL, URL, URL) {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("cond-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let a = base.appendingPathComponent("a.txt"), b = base.appendingPathComponent("b.txt")
        try Data("first version".utf8).write(to: a)
        try Data("a longer second version".utf8).write(to: b)
        return (base, a, b)
    }

    @Test(.enabled(if: MotoServer.shared.isAvailable, "needs moto_server (pip install 'moto[server]')"))
    func s3HonoursIfMatchAndIfNoneMatch() async throws {
        let (base, a, b) = try Self.files()
        defer { try? FileManager.default.removeItem(at: base) }
        let storage = s3Storage(bucket: "cond-\(UUID().uuidString.prefix(8).lowercased())")
        try await storage.createBucketIfNeeded()
        try await Self.check(storage, file: a, other: b)
        try await storage.shutdown()
    }

    @Test func aLocalFolderHonoursThePreconditionToo() async throws {
        let (base, a, b) = try Self.files()
        defer { try? FileManager.default.removeItem(at: base) }
        try await Self.check(try LocalRemoteStorage(directory: base.appendingPathComponent("remote")), file: a, other: b)
    }
}
