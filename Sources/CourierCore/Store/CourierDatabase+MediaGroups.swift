import GRDB

extension CourierDatabase {
    /// v6: a media group (`mediaType`, `mediaId`) may hold any number of records: the
    /// versions of one film download side by side, and an interrupted one no longer blocks
    /// another (v1's `UNIQUE(mediaType, mediaId)` made the second insert fail with
    /// `E_DATABASE`). SQLite cannot drop a table constraint, so the table is rebuilt (its
    /// documented twelve steps: new table, copy, drop, rename), every column kept, and the
    /// pair becomes a plain index for the DOWNLOAD button's look-ups. GRDB runs migrations
    /// with foreign keys off and checks them at the end, so the segment and hand-off rows
    /// that reference a record survive the rebuild.
    static func registerMediaGroups(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("courier.v6.media-groups") { db in
            let table = DownloadRecord.databaseTableName
            let columns = ["id", "mediaId", "mediaType", "remoteUrl", "localFinalPath", "partialPath", "bytesReceived", "totalBytes",
                           "etag", "lastModified", "resumable", "state", "expectedSHA256", "priority", "attemptCount", "lastErrorCode",
                           "lastErrorMessage", "createdAt", "updatedAt", "leaseOwner", "leaseExpiresAt", "connections",
                           "heldEtag", "heldLastModified", "heldBytes"]
            try db.create(table: table + "_v6") { t in
                t.column("id", .text).primaryKey()
                t.column("mediaId", .text)
                t.column("mediaType", .text)
                t.column("remoteUrl", .text).notNull()
                t.column("localFinalPath", .text).notNull()
                t.column("partialPath", .text).notNull()
                t.column("bytesReceived", .integer).notNull().defaults(to: 0)
                t.column("totalBytes", .integer)
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("resumable", .boolean).notNull().defaults(to: true)
                t.column("state", .text).notNull()
                t.column("expectedSHA256", .text)
                t.column("priority", .integer).notNull().defaults(to: 0)
                t.column("attemptCount", .integer).notNull().defaults(to: 0)
                t.column("lastErrorCode", .text)
                t.column("lastErrorMessage", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
                t.column("leaseOwner", .text)
                t.column("leaseExpiresAt", .datetime)
                t.column("connections", .integer).notNull().defaults(to: 1)
                t.column("heldEtag", .text)
                t.column("heldLastModified", .text)
                t.column("heldBytes", .integer)
            }
            let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
            try db.execute(sql: "INSERT INTO \"\(table)_v6\" (\(list)) SELECT \(list) FROM \"\(table)\"")
            try db.drop(table: table)
            try db.rename(table: table + "_v6", to: table)
            try db.create(index: "courierDownload_schedule", on: table, columns: ["state", "priority", "createdAt"])
            try db.create(index: "courierDownload_media", on: table, columns: ["mediaType", "mediaId"])
        }
    }

    /// Every record of one media group (``DownloadRecord/mediaType`` and
    /// ``DownloadRecord/mediaId``), oldest first: a video's tasks, whatever their ids.
    public func records(mediaType: String, mediaId: String) async throws -> [DownloadRecord] {
        try await read { db in
            try DownloadRecord.filter(Column("mediaType") == mediaType && Column("mediaId") == mediaId).order(Column("createdAt")).fetchAll(db)
        }
    }
}
