import Courier
import CourierTestSupport
import CourierOrigin
import Foundation
import Testing
@testable import CourierMedia

/// Records what it was asked to protect; fails on demand.
final class RecordingProtection: FolderProtecting, @unchecked Sendable { // state behind `state`
    let state = Locked((protected: [URL](), failing: false))
    func protect(_ folder: URL) throws {
        let failing = state.withLock { s -> Bool in s.protected.append(folder); return s.failing }
        if failing { throw NSError(domain: NSCocoaErrorDomain, code: 513, userInfo: [NSLocalizedDescriptionKey: "not permitted"]) }
    }
}

/// The library folder's protections (backup exclusion, data protection): applied at start,
/// applied again when the folder is recreated, and a failure reported, never swallowed.
@Suite(.serialized) struct FolderProtectionTests {
    private func library(_ w: MediaWorld, _ protection: RecordingProtection) throws -> MediaLibrary {
        try MediaLibrary(root: w.root, server: try JellyfinServer(baseURL: w.origin.url("/"), token: "TOKEN-123", transport: testTransport()),
                         database: try CourierDatabase(path: w.base.appendingPathComponent("p.sqlite").path), protection: protection)
    }

    @Test func appliedAtStartAndAgainWhenTheFolderIsRecreated() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let protection = RecordingProtection()
        let lib = try library(w, protection)
        let downloads = w.root.appendingPathComponent("Downloads").standardizedFileURL
        #expect(protection.state.withLock { $0.protected.map(\.standardizedFileURL) }.allSatisfy { $0 == downloads })
        let atStart = protection.state.withLock { $0.protected.count }
        #expect(atStart >= 1)

        // The user (or a cleaner) removes the folder: the next download makes it and protects it again.
        try FileManager.default.removeItem(at: downloads)
        try await lib.download(itemId: "abc123")
        #expect(protection.state.withLock { $0.protected.count } == atStart + 1)
        #expect(FileManager.default.fileExists(atPath: downloads.appendingPathComponent("abc123/abc123-def456.mp4").path))
        // An existing folder is not protected again on every download.
        try await lib.download(itemId: "abc123", versionId: "ghi789")
        #expect(protection.state.withLock { $0.protected.count } == atStart + 1)
        #expect(await lib.protectionFailure == nil)
        await lib.shutdown()
    }

    @Test func aFailureIsReportedAndTheDownloadStillWorks() async throws {
        let w = try await MediaWorld()
        defer { Task { await w.close() } }
        let protection = RecordingProtection()
        protection.state.withLock { $0.failing = true }
        let lib = try library(w, protection)
        let failure = await lib.protectionFailure
        #expect(failure?.code == .writeFailed && failure?.message.contains("backups") == true)
        try await lib.download(itemId: "abc123")
        #expect(FileManager.default.fileExists(atPath: w.root.appendingPathComponent("Downloads/abc123/abc123-def456.mp4").path))
        await lib.shutdown()
    }

    @Test func linuxHasNothingToApply() throws {
        // The platform's own protection on Linux: a no-op that never fails.
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-prot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try SystemFolderProtection().protect(folder)
    }
}
