import Courier
import Foundation
import GRDB

/// PowerSync's attachment helpers, as its Swift SDK and seed 001 spell them: code written
/// for them compiles against Courier (the porting guide, `PortingFromPowerSync`, lists each
/// call beside Courier's own). PowerSync's database is the app's GRDB database here.

/// PowerSync's name for a `Data`-based remote storage (``DataRemoteStorageAdapter``).
public typealias RemoteStorageAdapter = DataRemoteStorageAdapter

/// PowerSync's error for what its helpers cannot do (an attachments directory it cannot
/// find, in the seed's example).
public enum PowerSyncAttachmentError: Error, Equatable, Sendable {
    /// A failure, with its reason.
    case attachmentError(String)
}

/// What PowerSync's `AttachmentQueue` lets a subclass change, as a protocol: an actor is not
/// subclassed. Every hook has a default (PowerSync's).
public protocol AttachmentQueueStrategy: Sendable {
    /// The file name of a watched item that names none (default: `<id>.<extension>`, or
    /// `<id>` with no extension).
    func resolveNewAttachmentFilename(attachmentId: String, fileExtension: String?) -> String
}

extension AttachmentQueueStrategy {
    public func resolveNewAttachmentFilename(attachmentId: String, fileExtension: String?) -> String {
        WatchedAttachmentItem(id: attachmentId, fileExtension: fileExtension).resolvedFilename
    }
}

/// The table definition `createAttachmentTable(name:)` returns: create it in the app's
/// database (PowerSync adds it to its `Schema`; GRDB apps create it). The queue creates it
/// too, so this is only needed to have it before the queue exists (to join it in a view).
public struct AttachmentTableSchema: Sendable, Equatable {
    /// The table's name.
    public let name: String
    /// The columns, as seed 001 lists them (with `local_uri`, PowerSync's own).
    public static let columns: [(name: String, type: String)] = [
        ("id", "TEXT"), ("filename", "TEXT"), ("media_type", "TEXT"), ("state", "INTEGER"), ("timestamp", "INTEGER"),
        ("size", "INTEGER"), ("has_synced", "INTEGER"), ("meta_data", "TEXT"), ("local_uri", "TEXT"),
    ]
    /// Creates the table (and its index) in `database` when it is not there.
    public func create(in database: any DatabaseWriter) throws {
        do { try AttachmentTable(name: name).migrator().migrate(database) } catch let error as CourierError { throw error } catch {
            throw CourierError(.database, "cannot create the attachments table", underlying: error)
        }
    }
    public static func == (a: Self, b: Self) -> Bool { a.name == b.name }
}

/// PowerSync's `createAttachmentTable(name:)`: the local-only table of attachment states.
public func createAttachmentTable(name: String = "attachments") throws -> AttachmentTableSchema {
    _ = try AttachmentTable(name: name)   // the same rules as the queue's option
    return AttachmentTableSchema(name: name)
}

extension AttachmentQueue {
    /// PowerSync's initializer (seed 001): the app's database, the attachments directory
    /// as a path, a `Data`-based remote storage, and the watched attachments, reconciled by
    /// ``startSync()``. The watched sequence is iterated anew each time syncing starts (a
    /// single-pass stream, such as an `AsyncStream`, ends with the first ``stopSync()``,
    /// and a later start watches nothing: give `db.watch(options:)`'s query, or
    /// ``startSync(watching:)`` a new stream each time).
    public init<S: AsyncSequence & Sendable>(db: any DatabaseWriter, attachmentsDirectory: String, remoteStorage: any RemoteStorageAdapter,
                                             watchedAttachments: S, errorHandler: (any SyncErrorHandler)? = nil,
                                             archivedCacheLimit: Int = 100, syncInterval: TimeInterval = 30,
                                             strategy: (any AttachmentQueueStrategy)? = nil) throws where S.Element == [WatchedAttachmentItem] {
        var options = AttachmentQueueOptions()
        options.archivedCacheLimit = archivedCacheLimit
        options.syncInterval = Self.interval(syncInterval)
        options.strategy = strategy
        try self.init(database: db, directory: URL(fileURLWithPath: attachmentsDirectory), remoteStorage: DataRemoteStorage(wrapping: remoteStorage),
                      errorHandler: errorHandler, options: options, watchedAttachments: Self.restartable(watchedAttachments))
    }

    /// PowerSync's initializer with its watched query (`db.watch(options:)`), observed anew
    /// each time syncing starts.
    public init(db: any DatabaseWriter, attachmentsDirectory: String, remoteStorage: any RemoteStorageAdapter,
                watchedAttachments: WatchedQuery<WatchedAttachmentItem>, errorHandler: (any SyncErrorHandler)? = nil,
                archivedCacheLimit: Int = 100, syncInterval: TimeInterval = 30, strategy: (any AttachmentQueueStrategy)? = nil) throws {
        var options = AttachmentQueueOptions()
        options.archivedCacheLimit = archivedCacheLimit
        options.syncInterval = Self.interval(syncInterval)
        options.strategy = strategy
        try self.init(database: db, directory: URL(fileURLWithPath: attachmentsDirectory), remoteStorage: DataRemoteStorage(wrapping: remoteStorage),
                      errorHandler: errorHandler, options: options, watchedAttachments: { watchedAttachments.values() })
    }

    /// PowerSync's interval in seconds: 0, negative or not a number is no timer.
    static func interval(_ seconds: TimeInterval) -> Duration {
        seconds.isFinite && seconds > 0 ? .milliseconds(Int64(min(seconds, 365 * 86_400) * 1000)) : .zero
    }

    /// PowerSync's initializer without a watched query (the seed's error-handling example):
    /// ``reconcile(_:)`` is the app's to call.
    public init(db: any DatabaseWriter, attachmentsDirectory: String, remoteStorage: any RemoteStorageAdapter, errorHandler: (any SyncErrorHandler)? = nil,
                archivedCacheLimit: Int = 100, syncInterval: TimeInterval = 30, strategy: (any AttachmentQueueStrategy)? = nil) throws {
        try self.init(db: db, attachmentsDirectory: attachmentsDirectory, remoteStorage: remoteStorage,
                      watchedAttachments: AsyncStream<[WatchedAttachmentItem]> { $0.finish() }, errorHandler: errorHandler,
                      archivedCacheLimit: archivedCacheLimit, syncInterval: syncInterval, strategy: strategy)
    }

    /// A stream maker that iterates `sequence` anew each time.
    static func restartable<S: AsyncSequence & Sendable>(_ sequence: S) -> WatchedSource where S.Element == [WatchedAttachmentItem] {
        {
            AsyncThrowingStream { continuation in
                let task = Task {
                    do {
                        for try await items in sequence { continuation.yield(items) }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
    }
}

/// Makes the stream of the watched attachments, anew each time syncing starts.
typealias WatchedSource = @Sendable () -> AsyncThrowingStream<[WatchedAttachmentItem], any Error>
