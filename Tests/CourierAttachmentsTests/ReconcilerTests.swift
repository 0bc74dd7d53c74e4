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

    /// Unreferenced: SYNCED and QUEUED_DOWNLOAD are archived; QUEUED_UPLOAD only once it
    /// has synced (a save not yet uploaded is kept); QUEUED_DELETE never (its remote delete
    /// still runs); ARCHIVED is left alone.
    @Test(arguments: [
        (AttachmentState.synced, true, true), (.queuedDownload, false, true),
        (.queuedUpload, false, false), (.queuedUpload, true, true),
        (.queuedDelete, false, false), (.queuedDelete, true, false),
        (.archived, true, false), (.archived, false, false),
    ])
    func unreferencedRecords(state: AttachmentState, hasSynced: Bool, archived: Bool) {
        let record = a("r", state, synced: hasSynced, file: "r.jpg")
        let out = Reconciler.reconcile(watched: [], existing: [record], now: 9) { _ in true }
        #expect(out == (archived ? [Attachment(id: "r", filename: "r.jpg", state: .archived, timestamp: 9, hasSynced: hasSynced, localURI: "r.jpg")] : []))
        #expect(Reconciler.orphaned(watchedIDs: [], existing: [record], now: 9) == out)
        #expect(Reconciler.orphaned(watchedIDs: ["r"], existing: [record], now: 9).isEmpty)
    }

    /// The restore rule of an ARCHIVED record the app references again, with and without
    /// downloads: `nil` means it stays archived.
    @Test(arguments: [
        // hasSynced, localURI, file there, downloads → state, localURI
        (true, "r.jpg", true, true, AttachmentState.synced, "r.jpg"),
        (true, "r.jpg", false, true, .queuedDownload, nil),
        (false, "r.jpg", true, true, .queuedUpload, "r.jpg"),      // the bug: an unsynced save came back as a download and 404ed forever
        (false, "r.jpg", false, true, .queuedDownload, nil),
        (false, nil, false, true, .queuedDownload, nil),
        (true, nil, false, true, .queuedDownload, nil),
        (true, "r.jpg", true, false, .synced, "r.jpg"),
        (false, "r.jpg", true, false, .queuedUpload, "r.jpg"),
        (true, "r.jpg", false, false, nil, nil),
        (false, nil, false, false, nil, nil),
    ] as [(Bool, String?, Bool, Bool, AttachmentState?, String?)])
    func archivedIsRestored(hasSynced: Bool, uri: String?, present: Bool, downloads: Bool, state: AttachmentState?, newURI: String?) {
        let record = a("r", .archived, synced: hasSynced, file: uri)
        let out = Reconciler.reconcile(watched: [WatchedAttachmentItem(id: "r")], existing: [record], now: 7, downloadAttachments: downloads) { _ in present }
        if let state {
            #expect(out == [Attachment(id: "r", filename: "r.jpg", state: state, timestamp: 7, hasSynced: hasSynced, localURI: newURI)])
        } else {
            #expect(out.isEmpty)
        }
    }

    @Test func uploadOnlyDeviceCreatesNoDownloadsAndArchivesASyncedWithoutItsFile() {
        let out = Reconciler.reconcile(watched: ["new", "s"].map { WatchedAttachmentItem(id: $0) }, existing: [a("s", .synced, synced: true, file: "s.jpg")],
                                       now: 4, downloadAttachments: false) { _ in false }
        #expect(out == [Attachment(id: "s", filename: "s.jpg", state: .archived, timestamp: 4, hasSynced: true, localURI: nil)])
    }

    /// Start-up verification: what each record becomes given the files present.
    @Test(arguments: [
        // state, localURI, files present, downloads → state, localURI (nil state: unchanged)
        (AttachmentState.synced, "r.jpg", ["r.jpg"], true, AttachmentState?.none, String?.none),
        (.synced, "old/r.jpg", ["r.jpg"], true, .synced, "r.jpg"),              // found under its filename: repaired
        (.queuedUpload, "old/r.jpg", ["r.jpg"], true, .queuedUpload, "r.jpg"),
        (.queuedUpload, "r.jpg", [], true, .archived, nil),
        (.archived, "r.jpg", [], true, .archived, nil),
        (.synced, "r.jpg", [], true, .queuedDownload, nil),
        (.synced, nil, [], true, .queuedDownload, nil),                         // SYNCED always has its file
        (.synced, "r.jpg", [], false, .archived, nil),
        (.queuedDownload, nil, [], true, nil, nil),
        (.archived, nil, [], true, nil, nil),
    ] as [(AttachmentState, String?, [String], Bool, AttachmentState?, String?)])
    func verification(state: AttachmentState, uri: String?, files: [String], downloads: Bool, newState: AttachmentState?, newURI: String?) {
        let record = a("r", state, synced: state == .synced, file: uri)
        let out = Reconciler.verify([record], now: 6, downloadAttachments: downloads) { files.contains($0) }
        if let newState {
            #expect(out == [Attachment(id: "r", filename: "r.jpg", state: newState, timestamp: 6, hasSynced: record.hasSynced, localURI: newURI)])
        } else {
            #expect(out.isEmpty)
        }
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
