import Courier
import CourierAttachments
import Foundation
import GRDB

/// What the mirror remembers of each document between launches, in the mirror's database
/// (table `courierDocumentSync`): the remote version the local copy is based on, and the
/// upload a local change still owes. Every change is one named write in one transaction.
///
/// `generation` counts local writes: an upload records success only for the generation it
/// sent, so a write made while an older version was uploading is never marked as sent.
struct DocumentSyncStore: Sendable {
    let writer: MappedWriter

    enum State: String { case synced, pending, failed, conflict }

    struct Row: Sendable, Equatable {
        var path: String
        /// The remote version the local copy is based on: an ETag; `""` for "none: the
        /// document was created here"; `nil` when unknown.
        var base: String?
        var state: State
        var generation: Int64
        var attempts: Int
        var error: CourierError?
        var conflictCopy: String?

        /// What the next upload requires of the remote.
        var precondition: UploadPrecondition {
            guard let base else { return .none }
            return base.isEmpty ? .absent : .matches(base)
        }

        var status: DocumentUploadStatus? {
            switch state {
            case .synced: return nil
            case .pending: return .pending(attempts: attempts, lastError: error)
            case .failed: return .failed(error ?? CourierError(.unexpected, "the upload failed"))
            case .conflict: return .conflict(remoteCopy: conflictCopy ?? "")
            }
        }
    }

    init(database: CourierDatabase) throws {
        writer = MappedWriter(database.writer)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("courier.documents.sync.v1") { db in
            try db.execute(sql: """
                CREATE TABLE courierDocumentSync (
                  path TEXT PRIMARY KEY NOT NULL,
                  base TEXT,
                  state TEXT NOT NULL,
                  generation INTEGER NOT NULL DEFAULT 0,
                  attempts INTEGER NOT NULL DEFAULT 0,
                  errorCode TEXT,
                  errorMessage TEXT,
                  errorStatus INTEGER,
                  conflictCopy TEXT
                )
                """)
        }
        do { try migrator.migrate(database.writer) } catch {
            throw CourierError(.database, "cannot create the documents' sync table", underlying: error)
        }
    }

    // MARK: Reads

    func row(_ path: String) async throws -> Row? {
        try await writer.read { db in try Self.fetch(db, path) }
    }

    func all() async throws -> [Row] {
        try await writer.read { db in try Row.fetchAll(db, "SELECT * FROM courierDocumentSync ORDER BY path") }
    }

    // MARK: Intent-named writes

    /// A download put the remote version `version` in place: nothing is owed.
    func noteDownloaded(_ path: String, version: String?) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                INSERT INTO courierDocumentSync (path, base, state) VALUES (?, ?, 'synced')
                ON CONFLICT(path) DO UPDATE SET base = excluded.base, state = 'synced', attempts = 0,
                  errorCode = NULL, errorMessage = NULL, errorStatus = NULL, conflictCopy = NULL
                """, arguments: [path, version])
        }
    }

    /// A local write: an upload is owed. A document seen for the first time starts from
    /// `firstBase`. Returns the write's generation. A durable commit: it comes before the
    /// new bytes' rename, and a power cut that kept the renamed file but took this back
    /// would leave a change nothing uploads.
    func noteWritten(_ path: String, firstBase: String?) async throws -> Int64 {
        try await writer.writeDurably { db in
            try db.execute(sql: """
                INSERT INTO courierDocumentSync (path, base, state, generation) VALUES (?, ?, 'pending', 1)
                ON CONFLICT(path) DO UPDATE SET state = 'pending', generation = generation + 1, attempts = 0,
                  errorCode = NULL, errorMessage = NULL, errorStatus = NULL, conflictCopy = NULL
                """, arguments: [path, firstBase])
            return try Int64.fetchOne(db, sql: "SELECT generation FROM courierDocumentSync WHERE path = ?", arguments: [path]) ?? 1
        }
    }

    /// Generation `generation` reached the remote as `version`: synced, unless a newer
    /// write is owed (that one is then based on `version`). A durable commit: a power cut
    /// that took it back with a newer write owed would send that one over the version
    /// before, refused, and keep this upload's bytes as a conflict copy.
    func noteUploaded(_ path: String, generation: Int64, version: String?) async throws {
        try await writer.writeDurably { db in
            try db.execute(sql: """
                UPDATE courierDocumentSync SET base = ?, attempts = 0, errorCode = NULL, errorMessage = NULL, errorStatus = NULL,
                  state = CASE WHEN generation = ? THEN 'synced' ELSE 'pending' END
                WHERE path = ?
                """, arguments: [version, generation, path])
        }
    }

    /// A try failed with a passing error; it is tried again after a backoff.
    func noteRetry(_ path: String, generation: Int64, attempts: Int, error: CourierError) async throws {
        try await setOutcome(path, generation: generation, state: .pending, attempts: attempts, error: error)
    }

    /// Given up with `error`.
    func noteFailed(_ path: String, generation: Int64, attempts: Int, error: CourierError) async throws {
        try await setOutcome(path, generation: generation, state: .failed, attempts: attempts, error: error)
    }

    /// The remote changed: its version `remoteVersion` is kept as `copy`; the next write is
    /// based on it.
    func noteConflict(_ path: String, generation: Int64, copy: String, remoteVersion: String?) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE courierDocumentSync SET state = 'conflict', conflictCopy = ?, base = ?, errorCode = ?, errorMessage = NULL, errorStatus = 412
                WHERE path = ? AND generation = ?
                """, arguments: [copy, remoteVersion, CourierError.Code.conflict.rawValue, path, generation])
        }
    }

    /// At launch: what was owed is owed again, with a fresh retry budget; uploads that gave
    /// up on a passing error (offline too long) try again too. Returns the paths owed.
    func reopen() async throws -> [String] {
        try await writer.write { db in
            for row in try Row.fetchAll(db, "SELECT * FROM courierDocumentSync WHERE state = 'failed'") where row.error?.isPassing == true {
                try db.execute(sql: "UPDATE courierDocumentSync SET state = 'pending' WHERE path = ?", arguments: [row.path])
            }
            try db.execute(sql: "UPDATE courierDocumentSync SET attempts = 0 WHERE state = 'pending'")
            return try String.fetchAll(db, sql: "SELECT path FROM courierDocumentSync WHERE state = 'pending' ORDER BY path")
        }
    }

    /// A failed upload is owed again (the app asked to retry; a conflict is resolved by a write).
    func noteRetryAsked(_ path: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "UPDATE courierDocumentSync SET state = 'pending', attempts = 0 WHERE path = ? AND state = 'failed'", arguments: [path])
            return db.changesCount > 0
        }
    }

    /// The document went back to a placeholder: nothing is remembered.
    func forget(_ path: String) async throws {
        try await writer.write { db in try db.execute(sql: "DELETE FROM courierDocumentSync WHERE path = ?", arguments: [path]) }
    }

    private func setOutcome(_ path: String, generation: Int64, state: State, attempts: Int, error: CourierError) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE courierDocumentSync SET state = ?, attempts = ?, errorCode = ?, errorMessage = ?, errorStatus = ?
                WHERE path = ? AND generation = ?
                """, arguments: [state.rawValue, attempts, error.code.rawValue, error.message, error.httpStatus, path, generation])
        }
    }

    static func fetch(_ db: Database, _ path: String) throws -> Row? {
        try Row.fetchAll(db, "SELECT * FROM courierDocumentSync WHERE path = ?", [path]).first
    }
}

extension DocumentSyncStore.Row {
    static func fetchAll(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> [Self] {
        // `decode` throws where GRDB's plain subscripts trap on a value of the wrong type
        // (another program's write): such a row is an error of the database, not a crash.
        try GRDB.Row.fetchAll(db, sql: sql, arguments: arguments).map { r in
            let code: String? = try r.decode(forColumn: "errorCode")
            let message: String? = try r.decode(forColumn: "errorMessage")
            let status: Int? = try r.decode(forColumn: "errorStatus")
            let state: String? = try r.decode(forColumn: "state")
            return Self(path: try r.decode(forColumn: "path"), base: try r.decode(forColumn: "base"), state: state.flatMap(DocumentSyncStore.State.init(rawValue:)) ?? .pending,
                        generation: try r.decode(forColumn: "generation"), attempts: try r.decode(forColumn: "attempts"),
                        error: code.map { CourierError(CourierError.Code(rawValue: $0), message ?? "", httpStatus: status) },
                        conflictCopy: try r.decode(forColumn: "conflictCopy"))
        }
    }
}
