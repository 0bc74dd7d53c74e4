import Foundation
import GRDB
import Testing
@testable import CourierCore

@Suite struct StoreTests {
    /// Courier's table lives in the app's own database, so the app can join it and write
    /// both in one transaction.
    @Test func joinsTheAppsDatabaseAndSharesTransactions() async throws {
        let app = try DatabaseQueue()
        try await app.write { db in
            try db.create(table: "video") { t in
                t.column("id", .text).primaryKey()
                t.column("title", .text)
            }
        }
        let store = try CourierDatabase(writer: app)
        try await app.write { db in
            try db.execute(sql: "INSERT INTO video (id, title) VALUES ('7', 'Seven')")
            try DownloadRecord(id: "video_7", remoteUrl: "https://cdn.example/7.mp4", localFinalPath: "v/7.mp4", partialPath: "v/7.mp4.partial",
                               mediaId: "7", mediaType: "video").insert(db)
        }
        let joined = try await app.read { db in
            try String.fetchOne(db, sql: """
                SELECT video.title FROM video JOIN courierDownload d ON d.mediaId = video.id AND d.mediaType = 'video'
                """)
        }
        #expect(joined == "Seven")
        // A failing app transaction leaves neither row.
        await #expect(throws: (any Error).self) {
            try await app.write { db in
                try db.execute(sql: "INSERT INTO video (id, title) VALUES ('8', 'Eight')")
                try DownloadRecord(id: "video_8", remoteUrl: "https://x/8", localFinalPath: "8", partialPath: "8.partial").insert(db)
                throw CourierError(.invalidState, "app changed its mind")
            }
        }
        #expect(try await store.record(id: "video_8") == nil)
        // Migrations run once; opening again is harmless.
        _ = try CourierDatabase(writer: app)
        #expect(try await store.allRecords().map(\.id) == ["video_7"])
    }

    @Test func aCorruptDatabaseFileIsAClearError() throws {
        let path = NSTemporaryDirectory() + "courier-corrupt-\(UUID().uuidString).sqlite"
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try CourierDatabase(path: path)
            Issue.record("a corrupt file must not open")
        } catch let e as CourierError {
            #expect(e.code == .database)
        }
    }

    /// Every released schema migrates forward: a database written by schema v1 (the fixture
    /// is a dump of one a v1 `courier` made) opens, keeps its records, and gains the lease.
    @Test func schemaV1DatabaseMigratesForward() async throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v1.sql")
        let sql = try String(contentsOf: fixture, encoding: .utf8)
        try await withFixture { fx in
            let old = try DatabaseQueue(path: fx.dbPath)
            try await old.writeWithoutTransaction { db in try db.execute(sql: sql) }
            try old.close()
            // The v1 partial of the paused download, as it was left on disk.
            let kept = try fx.serve("big.bin", size: 3_000_000).prefix(1_450_000)
            try FileManager.default.createDirectory(at: fx.root.appendingPathComponent("out"), withIntermediateDirectories: true)
            try kept.write(to: fx.root.appendingPathComponent("out/big.bin.partial"))

            let db = try fx.database()
            let applied = try await db.writer.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
            #expect(applied == ["courier.v1.downloads", "courier.v10.upload-handoff", "courier.v11.discarded", "courier.v12.upload-resume-data", "courier.v2.lease", "courier.v3.segments", "courier.v4.held", "courier.v5.handoff", "courier.v6.media-groups", "courier.v7.content-type", "courier.v8.uploads", "courier.v9.expected-size"])
            #expect(try await db.handedOff().isEmpty)
            #expect(try await db.allRecords().allSatisfy { $0.heldEtag == nil && $0.heldLastModified == nil && $0.heldBytes == nil })
            let records = try await db.allRecords()
            #expect(records.map(\.id) == ["get-7c471a7af579db6d", "big_1", "gone"])
            let big = try #require(records.first { $0.id == "big_1" })
            #expect(big.state == .paused && big.bytesReceived == 1_450_000 && big.totalBytes == 3_000_000)
            #expect(big.etag == "\"2dc6c0-1a2066b6418\"" && big.leaseOwner == nil && big.leaseExpiresAt == nil && big.connections == 1)
            let gone = try #require(records.first { $0.id == "gone" })
            #expect(gone.state == .failed && gone.lastError?.code == .httpClientError && gone.remoteUrl.contains("api_key=REDACTED"))
            #expect(records.first?.state == .completed)

            // The migrated record downloads on: the v1 ETag no longer matches this origin's
            // file, so the kept bytes are not trusted and it restarts, ending whole.
            let d = try fx.downloader()
            try await d.enqueue(DownloadRequest(id: "big_1", url: fx.url("big.bin"), destination: "out/big.bin"))
            let done = try await d.waitForCompletion(id: "big_1")
            await d.shutdown()
            #expect(done.state == .completed && done.leaseOwner == nil)
            #expect(fx.finalData("out/big.bin") == (try Data(contentsOf: fx.served.appendingPathComponent("big.bin"))))
            // Opening again applies nothing twice.
            _ = try fx.database()
        }
    }

    /// Makes the fixture's database as an older Courier left it: migrated up to `version`,
    /// with `statements` run on it.
    static func databaseAt(_ version: String, _ fx: Fixture, _ statements: [String]) throws {
        let queue = try DatabaseQueue(path: fx.dbPath)
        try CourierDatabase.migrator.migrate(queue, upTo: version)
        try queue.write { db in for sql in statements { try db.execute(sql: sql) } }
        try queue.close()
    }

    /// v6: a database at v5 with a record, its segments and a hand-off row rebuilds its
    /// download table without `UNIQUE(mediaType, mediaId)`: every row and column is kept,
    /// the cascade from a record to its segments still works, and one media group can hold
    /// two records (two versions of one film).
    @Test func v6LetsAMediaGroupHoldSeveralRecordsAndKeepsEveryRow() async throws {
        try await withFixture { fx in
            try Self.databaseAt("courier.v5.handoff", fx, [
                """
                    INSERT INTO courierDownload (id, mediaId, mediaType, remoteUrl, localFinalPath, partialPath, bytesReceived, totalBytes, etag,
                      state, createdAt, updatedAt, connections, heldEtag, heldBytes)
                    VALUES ('film1-v1', 'film1', 'movie', 'http://h/v1', 'a.mkv', 'a.mkv.partial', 10, 100, '"e"', 'paused',
                      '2026-11-25 00:00:00.000', '2026-11-25 00:00:00.000', 4, '"held"', 99)
                    """,
                "INSERT INTO courierSegment (downloadId, \"index\", start, \"end\", received) VALUES ('film1-v1', 0, 0, 49, 10)",
                "INSERT INTO courierHandOff (downloadId, keptBytes, resumable, createdAt) VALUES ('film1-v1', 10, 1, '2026-11-25 00:00:00.000')",
            ])
            let db = try fx.database()
            let applied = try await db.writer.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
            #expect(applied.contains("courier.v6.media-groups"))
            let kept = try #require(try await db.record(id: "film1-v1"))
            #expect(kept.mediaId == "film1" && kept.mediaType == "movie" && kept.state == .paused && kept.bytesReceived == 10
                    && kept.totalBytes == 100 && kept.etag == "\"e\"" && kept.connections == 4 && kept.heldEtag == "\"held\"" && kept.heldBytes == 99)
            #expect(try await db.segments(id: "film1-v1").count == 1)
            let handOffRows = { try await db.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM courierHandOff") ?? -1 } }
            #expect(try await handOffRows() == 1)
            var second = DownloadRecord(id: "film1-v2", remoteUrl: "http://h/v2", localFinalPath: "b.mp4", partialPath: "b.mp4.partial", mediaId: "film1", mediaType: "movie")
            second.state = .queued
            try await db.save(second)
            #expect(try await db.records(mediaType: "movie", mediaId: "film1").map(\.id).sorted() == ["film1-v1", "film1-v2"])
            #expect(try await db.delete(id: "film1-v1"))
            #expect(try await db.segments(id: "film1-v1").isEmpty)   // the cascade survived the rebuild
            #expect(try await handOffRows() == 0)
            let fk = try db.writer.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
            #expect(fk.isEmpty)
        }
    }

    /// v7: a database at v6 keeps its records (no type known for them) and gains the
    /// reply's Content-Type, which a download then records, over one connection and over
    /// several (the segmented path).
    @Test func v7KeepsRecordsAndRecordsTheContentType() async throws {
        try await withFixture { fx in
            try Self.databaseAt("courier.v6.media-groups", fx, [
                """
                    INSERT INTO courierDownload (id, remoteUrl, localFinalPath, partialPath, bytesReceived, state, createdAt, updatedAt, connections)
                    VALUES ('old', 'http://h/a', 'a.bin', 'a.bin.partial', 5, 'paused', '2026-11-25 00:00:00.000', '2026-11-25 00:00:00.000', 1)
                    """,
            ])
            let db = try fx.database()
            let kept = try #require(try await db.record(id: "old"))
            #expect(kept.state == .paused && kept.bytesReceived == 5 && kept.contentType == nil)

            _ = try fx.serve("clip.mkv", size: 300_000)
            _ = try fx.serve("page.html", size: 9_000_000)
            let downloader = try fx.downloader { $0.minSegmentSize = 1 << 20 }
            let one = try await downloader.fetch(DownloadRequest(id: "one", url: fx.url("clip.mkv"), destination: "clip.mkv"))
            #expect(one.contentType == "video/x-matroska")
            let many = try await downloader.fetch(DownloadRequest(id: "many", url: fx.url("page.html"), destination: "page.html", connections: 4))
            #expect(many.contentType == "text/html; charset=utf-8")
            await downloader.shutdown()
        }
    }

    /// v8: a database at v7 keeps its downloads and gains the upload tables; an upload's
    /// parts count into its confirmed bytes in the same transaction, a new start forgets the
    /// old parts, and a delete takes the parts with the record.
    @Test func v8AddsUploadsAndKeepsDownloads() async throws {
        try await withFixture { fx in
            try Self.databaseAt("courier.v7.content-type", fx, [
                """
                    INSERT INTO courierDownload (id, remoteUrl, localFinalPath, partialPath, bytesReceived, state, createdAt, updatedAt, connections, contentType)
                    VALUES ('old', 'http://h/a', 'a.bin', 'a.bin.partial', 5, 'paused', '2026-11-25 00:00:00.000', '2026-11-25 00:00:00.000', 1, 'video/mp4')
                    """,
            ])
            let db = try fx.database()
            #expect(try await db.record(id: "old")?.contentType == "video/mp4")
            #expect(try await db.uploads().isEmpty)

            let upload = UploadRecord(id: "u", sourcePath: "/f", sourceSize: 30, sourceModified: 1.5, kind: .s3, target: "b/k", partSize: 10)
            try await db.beginUpload(upload)
            try await db.noteUploadHandle(id: "u", remoteId: "up-1")
            // Parts confirmed out of order (several at once): confirmed bytes are their sum.
            try await db.noteUploadPart(UploadPart(uploadId: "u", number: 3, offset: 20, size: 10, etag: "\"c\"", md5: "c", sha256: "C"))
            try await db.noteUploadPart(UploadPart(uploadId: "u", number: 1, offset: 0, size: 10, etag: "\"a\"", md5: "a", sha256: "A"))
            var kept = try #require(try await db.upload(id: "u"))
            #expect(kept.record.remoteId == "up-1" && kept.record.confirmedBytes == 20 && kept.parts.map(\.number) == [1, 3])
            #expect(kept.record.sourceModified == 1.5 && kept.record.kind == .s3)
            // A tus offset is the server's, not a sum.
            try await db.noteUploadPart(UploadPart(uploadId: "u", number: 4, offset: 30, size: 5, etag: nil, md5: "d", sha256: "D"), confirmedBytes: 35)
            #expect(try await db.upload(id: "u")?.record.confirmedBytes == 35)
            // A part for an upload that is gone is dropped, not an orphan row.
            try await db.noteUploadPart(UploadPart(uploadId: "nope", number: 1, offset: 0, size: 1, etag: nil, md5: "", sha256: ""))
            // Starting again forgets the old parts.
            try await db.beginUpload(upload)
            kept = try #require(try await db.upload(id: "u"))
            #expect(kept.parts.isEmpty && kept.record.remoteId == nil && kept.record.confirmedBytes == 0)
            try await db.noteUploadPart(UploadPart(uploadId: "u", number: 1, offset: 0, size: 10, etag: nil, md5: "a", sha256: "A"))
            #expect(try await db.deleteUpload(id: "u"))
            let rows = try await db.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM courierUploadPart") }
            #expect(rows == 0)
            #expect(try await db.record(id: "old")?.state == .paused)
        }
    }

    /// v9: a database a v8 Courier left (a frozen dump, `Fixtures/schema-v8.sql`) keeps every
    /// record, its media groups and Content-Type, and gains the expected size, which a
    /// request then sets and the record keeps.
    @Test func v9FromAFrozenV8DatabaseKeepsEveryRecordAndAddsTheExpectedSize() async throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v8.sql")
        let sql = try String(contentsOf: fixture, encoding: .utf8)
        try await withFixture { fx in
            let old = try DatabaseQueue(path: fx.dbPath)
            try await old.writeWithoutTransaction { db in try db.execute(sql: sql) }
            try old.close()
            let db = try fx.database()
            let applied = try await db.writer.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
            #expect(applied.last == "courier.v9.expected-size" && applied.count == 12 && applied.contains("courier.v10.upload-handoff")
                    && applied.contains("courier.v11.discarded") && applied.contains("courier.v12.upload-resume-data"))
            #expect(try await db.uploadHandOffPieces().isEmpty)   // v10's table is there
            let records = try await db.allRecords()
            #expect(records.count == 3 && records.allSatisfy { $0.expectedBytes == nil && $0.bytesDiscarded == 0 })   // v11: nothing thrown away yet
            let a = try #require(records.first { $0.id == "media:film:a" })
            #expect(a.state == .paused && a.bytesReceived == 524_288 && a.totalBytes == 2_097_152 && a.contentType == "video/x-matroska" && a.etag == "\"a1\"")
            #expect(records.filter { $0.mediaId?.hasPrefix("film-") == true }.count == 2)
            #expect(records.first { $0.id.hasPrefix("get-") }?.state == .completed)

            // The paused version asked for again with its size (as the media library does after
            // the upgrade): it adopts the size and keeps its bytes; another size starts afresh.
            let ask = { @Sendable (size: Int64) in
                Downloader.Prepared(request: DownloadRequest(id: a.id, url: a.remoteUrl, destination: a.localFinalPath, expectedSize: size), id: a.id,
                                    destination: a.localFinalPath, partial: a.partialPath, sha: nil, redactedURL: a.remoteUrl, connections: 1)
            }
            let owner = LeaseOwner(id: "test:1:store")
            let adopted = try await db.writer.write { try Downloader.upsert(ask(2_097_152), in: $0, runningHere: [], owner: owner, root: fx.root) }
            #expect(adopted.record.bytesReceived == 524_288 && adopted.record.expectedBytes == 2_097_152 && adopted.discard.isEmpty)
            let other = try await db.writer.write { try Downloader.upsert(ask(3_000_000), in: $0, runningHere: [], owner: owner, root: fx.root) }
            #expect(other.record.bytesReceived == 0 && other.record.expectedBytes == 3_000_000 && other.discard == [a.partialPath])

            let d = try fx.downloader()
            try fx.serve("new.bin", size: 1000)
            try await d.enqueue(DownloadRequest(id: "new", url: fx.url("new.bin"), destination: "new.bin", expectedSize: 1000))
            _ = try await d.waitForCompletion(id: "new")
            #expect(try await d.record(id: "new")?.expectedBytes == 1000)
            await d.shutdown()
            let check = try await db.writer.read { db in try String.fetchAll(db, sql: "PRAGMA foreign_key_check") }
            #expect(check.isEmpty)
        }
    }

    /// v5: a hand-off row lives and dies with its record (a cancel deletes both), and the
    /// record and its row change in one transaction.
    @Test func aHandOffRowGoesWithItsRecord() async throws {
        try await withFixture { fx in
            let db = try fx.database()
            var record = DownloadRecord(id: "h", remoteUrl: fx.url("f.bin"), localFinalPath: "f.bin", partialPath: "f.bin.partial")
            record.state = .downloading
            record.etag = "\"abc\""
            record.totalBytes = 100
            try await db.save(record)
            let owner = LeaseOwner.make()
            let handed = try #require(try await db.handOff(id: "h", fileLength: 40, owner: owner))
            #expect(handed.keptBytes == 40 && handed.etag == "\"abc\"" && handed.totalBytes == 100)
            #expect(handed.plan.requestHeaders.contains { $0.name == "Range" && $0.value == "bytes=40-" })
            #expect(try await db.handOff(id: "h", fileLength: 40, owner: owner) == nil)   // once
            #expect(try await db.handedOff().map(\.id) == ["h"])
            #expect(try await db.handedOff().first?.owner == owner.id)
            #expect(try await db.record(id: "h")?.state == .handedOff)
            #expect(try await db.delete(id: "h"))
            let rows = try await db.writer.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM courierHandOff") }
            #expect(rows == 0)
        }
    }

    @Test func aDownloaderDroppedWithoutShutdownDoesNotCrash() async throws {
        try await withFixture { fx in
            try fx.serve("f.bin", size: 1000)
            do {
                let d = try fx.downloader()
                try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin"))
                _ = try await d.waitForCompletion(id: "x")
            }
            try await Task.sleep(for: .milliseconds(200))   // AsyncHTTPClient would trap here in debug builds
            #expect(fx.exists("f.bin"))
        }
    }
}

/// Random and mutated input to every header parser: each returns a value or a
/// CourierError, never crashes. Seeded, so a failure replays.
@Suite struct ParserRobustnessTests {
    @Test func randomInputNeverCrashes() {
        var rng = SplitMix(seed: 0xC0FFEE)
        let seeds = ["bytes 0-499/1234", "bytes */1234", "W/\"abc\"", "\"abc\"", "120", "Sun, 06 Nov 1994 08:49:37 GMT",
                     "attachment; filename=\"a.txt\"; filename*=UTF-8''a%20b.txt", "https://a.example/x?token=1"]
        let alphabet = Array("bytes */-0123456789W\"\\;=%'aA ,\t\u{0}\u{7f}é📦".unicodeScalars)
        var parsed = 0, refused = 0
        for i in 0..<20_000 {
            var scalars = Array(seeds[i % seeds.count].unicodeScalars)
            for _ in 0..<Int(rng.next() % 6) {
                let op = rng.next() % 3
                let pos = scalars.isEmpty ? 0 : Int(rng.next() % UInt64(scalars.count))
                let ch = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                switch op {
                case 0: scalars.insert(ch, at: pos)
                case 1: if !scalars.isEmpty { scalars.remove(at: pos) }
                default: if !scalars.isEmpty { scalars[pos] = ch }
                }
            }
            let text = String(String.UnicodeScalarView(scalars))
            for attempt in [
                { _ = try ContentRange(parsing: text) }, { _ = try EntityTag(parsing: text) },
                { _ = try RetryAfter.parse(text) }, { _ = try ContentDisposition(parsing: text) },
                { _ = try URLPolicy.validate(text) }, { _ = try SafePath.validateRelative(text) },
            ] as [() throws -> Void] {
                do { try attempt(); parsed += 1 } catch is CourierError { refused += 1 } catch { Issue.record("non-Courier error for \(text.debugDescription)") }
            }
            _ = HTTPDate.parse(text)
            _ = Redactor.redact(text)
            _ = SafePath.sanitizedFileName(text)
        }
        #expect(parsed > 0 && refused > 0)
    }
}
