import Testing
@testable import CourierAttachments

@Suite struct ReconcilerTests {
    func a(_ id: String, _ state: AttachmentState, synced: Bool = false, file: String? = nil, t: Int64 = 1) -> Attachment {
        Attachment(id: id, filename: "\(id).jpg", state: state, timestamp: t, hasSynced: synced, localURI: file)
    }

    @Test func newWatchedIDQueuesADownload() {
        let out = Reconciler.reconcile(watched: [WatchedAttachmentItem(id: "n", fileExtension: "jpg", metaData: "{}")], existing: [], now: 5) { _ in false }
        #expect(out == [Attachment(id: "n", filename: "n.jpg", state: .queuedDownload, timestamp: 5, metaData: "{}")])
    }

    @Test func unreferencedRecordsAreArchivedUnlessPendingUploadOrDelete() {
        let existing = [a("s", .synced, synced: true, file: "s.jpg"), a("d", .queuedDownload), a("u", .queuedUpload, file: "u.jpg"),
                        a("x", .queuedDelete), a("old", .archived)]
        let out = Reconciler.reconcile(watched: [], existing: existing, now: 9) { _ in true }
        #expect(Set(out.map(\.id)) == ["s", "d"])
        #expect(out.allSatisfy { $0.state == .archived && $0.timestamp == 9 })
    }

    @Test func archivedComesBackFromCacheOrDownloadsAgain() {
        let cached = a("c", .archived, synced: true, file: "c.jpg")
        let gone = a("g", .archived, synced: true, file: "g.jpg")
        let never = a("n", .archived, synced: false)
        let out = Reconciler.reconcile(watched: ["c", "g", "n"].map { WatchedAttachmentItem(id: $0) }, existing: [cached, gone, never], now: 3) { $0.id == "c" }
        #expect(out.first { $0.id == "c" }?.state == .synced)
        #expect(out.first { $0.id == "g" }?.state == .queuedDownload)
        #expect(out.first { $0.id == "n" }?.state == .queuedDownload)
    }

    @Test func syncedWithoutItsFileDownloadsAgain() {
        let out = Reconciler.reconcile(watched: [WatchedAttachmentItem(id: "s")], existing: [a("s", .synced, synced: true, file: "s.jpg")], now: 2) { _ in false }
        #expect(out.first?.state == .queuedDownload && out.first?.localURI == nil)
    }

    @Test func watchedAndPresentIsLeftAlone() {
        let existing = [a("s", .synced, synced: true, file: "s.jpg"), a("u", .queuedUpload, file: "u.jpg"), a("d", .queuedDownload)]
        #expect(Reconciler.reconcile(watched: existing.map { WatchedAttachmentItem(id: $0.id) }, existing: existing, now: 2) { _ in true }.isEmpty)
    }

    @Test func cacheLimitExpiresTheOldestArchived() {
        let records = (1...5).map { a("a\($0)", .archived, t: Int64($0)) } + [a("s", .synced, t: 0)]
        #expect(Reconciler.expired(records, cacheLimit: 2).map(\.id) == ["a1", "a2", "a3"])
        #expect(Reconciler.expired(records, cacheLimit: 100).isEmpty)
        #expect(Reconciler.expired(records, cacheLimit: 0).count == 5)
    }
}
