import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// One downloader, several features (issue 25): each family of ids gets its own
/// credentials, a feature's ids never get the app's, and two features of one kind are
/// refused instead of one taking the other's downloads over.
@Suite struct CredentialRoutesTests {
    @Test func eachFamilyOfIdsGetsOnlyItsOwnCredentials() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("a.bin", size: 10_000)
        try fx.serve("b.bin", size: 10_000)
        try fx.serve("c.bin", size: 10_000)
        let app = Credentials(headers: { _, _ in [("Authorization", "Bearer app")] })
        let d = Downloader(configuration: fx.configuration(), database: try fx.database(), transportOrDefault: fx.transport(),
                           requestAuthorizer: app)
        try d.routeCredentials(forIDsWithPrefix: "media:", urlRefresher: nil,
                               requestAuthorizer: Credentials(headers: { _, _ in [("Authorization", "Bearer media")] }))
        try await d.fetch(DownloadRequest(id: "app-1", url: fx.url("a.bin"), destination: "a.bin"))
        try await d.fetch(DownloadRequest(id: "media:film:v1", url: fx.url("b.bin"), destination: "b.bin"))
        // A feature's id whose feature is not there (yet): no credentials at all, not the app's.
        try await d.fetch(DownloadRequest(id: "doc:unrouted", url: fx.url("c.bin"), destination: "c.bin"))
        let sent = Dictionary(fx.origin.requests.map { ($0.path, $0.authorization) }, uniquingKeysWith: { first, _ in first })
        #expect(sent["/a.bin"] == "Bearer app")
        #expect(sent["/b.bin"] == "Bearer media")
        #expect(sent["/c.bin"].flatMap { $0 } == nil)
        await d.shutdown()
    }

    @Test func aSecondFeatureOfOneKindIsRefused() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let d = try fx.downloader()
        try d.routeCredentials(forIDsWithPrefix: "attachment:", urlRefresher: nil, requestAuthorizer: nil)
        #expect(await errorCode { try d.routeCredentials(forIDsWithPrefix: "attachment:", urlRefresher: nil, requestAuthorizer: nil) } == "E_INVALID_ARGUMENT")
        await d.shutdown()
    }

    @Test func aFeatureFolderMustSitUnderTheRootAndMayNotExistYet() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let d = try fx.downloader()
        #expect(try d.relativePrefix(of: fx.root) == "")
        #expect(try d.relativePrefix(of: fx.root.appendingPathComponent("media/not-made-yet")) == "media/not-made-yet/")
        #expect(await errorCode { _ = try d.relativePrefix(of: fx.base.appendingPathComponent("elsewhere")) } == "E_INVALID_ARGUMENT")
        await d.shutdown()
    }

    /// A feature moved from a downloader of its own to a shared one: its records' paths gain
    /// the folder's place under the shared root, once, so they name the same files.
    @Test func aFeaturesRecordsMoveUnderItsFolderOnce() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("p.bin", size: 1000)
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "attachment:p", url: fx.url("p.bin"), destination: "p.bin"))
        try await d.enqueue(DownloadRequest(id: "app-p", url: fx.url("p.bin"), destination: "q.bin"))
        _ = try await d.waitForCompletion(id: "attachment:p")
        _ = try await d.waitForCompletion(id: "app-p")
        await d.shutdown()
        let db = try fx.database()
        #expect(try db.adoptFeatureRecords(idPrefix: "attachment:", pathPrefix: "Attachments/") == 1)
        #expect(try db.adoptFeatureRecords(idPrefix: "attachment:", pathPrefix: "Attachments/") == 0)
        #expect(try await db.record(id: "attachment:p")?.localFinalPath == "Attachments/p.bin")
        #expect(try await db.record(id: "app-p")?.localFinalPath == "q.bin")
    }
}
