import GRDB

extension CourierDatabase {
    /// The records a feature (attachments, media, documents) made with a downloader of its
    /// own, whose root was the feature's folder, taken over by a shared downloader whose root
    /// holds that folder at `pathPrefix`: their paths gain the prefix, so they name the same
    /// files and resume where they stopped. Records that have it already are left alone.
    /// Returns how many moved.
    @discardableResult
    package func adoptFeatureRecords(idPrefix: String, pathPrefix: String) throws -> Int {
        guard !pathPrefix.isEmpty else { return 0 }
        do {
            return try writer.write { db in
                try db.execute(sql: """
                    UPDATE \(DownloadRecord.databaseTableName)
                    SET localFinalPath = ? || localFinalPath, partialPath = ? || partialPath
                    WHERE substr(id, 1, length(?)) = ? AND substr(localFinalPath, 1, length(?)) != ?
                    """, arguments: [pathPrefix, pathPrefix, idPrefix, idPrefix, pathPrefix, pathPrefix])
                return db.changesCount
            }
        } catch {
            throw CourierError(.database, "cannot move the \(idPrefix) downloads under \(pathPrefix)", underlying: error)
        }
    }
}
