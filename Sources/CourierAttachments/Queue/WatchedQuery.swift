import Foundation
import GRDB

extension AttachmentQueue {
    /// The app's query of referenced attachments, observed: each change to the tables it
    /// reads emits the current list. The first column is the id; a column named `filename`
    /// or `file_extension`, when present, names the file; else `defaultExtension` does.
    ///
    /// ```swift
    /// let watched = AttachmentQueue.watch(sql: "SELECT photo_id FROM checklists WHERE photo_id IS NOT NULL",
    ///                                     in: dbPool, defaultExtension: "jpg")
    /// try await queue.startSync(watching: watched)
    /// ```
    public static func watch(sql: String, arguments: StatementArguments = StatementArguments(), in writer: any DatabaseWriter,
                             defaultExtension: String? = nil) -> AsyncThrowingStream<[WatchedAttachmentItem], any Error> {
        let observation = ValueObservation.tracking { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { row -> WatchedAttachmentItem? in
                guard let id = row[0] as String? else { return nil }
                let filename = row.hasColumn("filename") ? row["filename"] as String? : nil
                let ext = row.hasColumn("file_extension") ? row["file_extension"] as String? : defaultExtension
                return WatchedAttachmentItem(id: id, filename: filename, fileExtension: ext)
            }
        }
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await items in observation.values(in: writer) { continuation.yield(items) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
