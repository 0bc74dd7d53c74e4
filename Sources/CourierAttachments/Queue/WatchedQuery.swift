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
            try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { WatchedAttachmentItem(row: $0, defaultExtension: defaultExtension) }
        }
        return stream(of: observation, in: writer)
    }

    /// An observation's values as a stream that ends its observation when dropped.
    static func stream<T: Sendable>(of observation: ValueObservation<ValueReducers.Fetch<T>>, in writer: any DatabaseWriter) -> AsyncThrowingStream<T, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await value in observation.values(in: writer) { continuation.yield(value) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension WatchedAttachmentItem {
    /// An item from a row of the app's watched query: the first column is the id, text or an
    /// integer (`SELECT photo_id` with integer ids); `filename` and `file_extension`, when
    /// the query has them, name the file. A row whose id is NULL, a real number or a blob is
    /// no item. (GRDB's `row[0] as String?` traps on an integer: read as stored instead.)
    public init?(row: Row, defaultExtension: String?) {
        guard let id = Self.text(row[0]) else { return nil }
        let filename = row.hasColumn("filename") ? Self.text(row["filename"]) : nil
        let ext = row.hasColumn("file_extension") ? Self.text(row["file_extension"]) : defaultExtension
        self.init(id: id, filename: filename, fileExtension: ext)
    }

    private static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .string(let text): return text
        case .int64(let number): return String(number)
        case .null, .double, .blob: return nil
        }
    }
}
