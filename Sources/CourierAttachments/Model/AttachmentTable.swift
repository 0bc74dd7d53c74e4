import Courier
import Foundation
import GRDB

/// The local-only attachments table: its name is an option (default `attachments`).
struct AttachmentTable: Sendable {
    let name: String
    var quoted: String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    init(name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 64, name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "_" }),
              !name.lowercased().hasPrefix("sqlite_") else {
            throw CourierError(.invalidArgument, "a table name is 1 to 64 letters, digits or underscores")
        }
        self.name = name
    }

    func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("courier.attachments.v1.\(name)") { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS \(quoted) (
                  id TEXT PRIMARY KEY NOT NULL,
                  filename TEXT NOT NULL,
                  media_type TEXT,
                  state INTEGER NOT NULL,
                  timestamp INTEGER NOT NULL,
                  size INTEGER,
                  has_synced INTEGER NOT NULL DEFAULT 0,
                  meta_data TEXT,
                  local_uri TEXT
                );
                CREATE INDEX IF NOT EXISTS "\(name)_state" ON \(quoted)(state, timestamp);
                """)
        }
        return migrator
    }

    func fetch(_ db: Database, id: String) throws -> Attachment? {
        try Row.fetchOne(db, sql: "SELECT * FROM \(quoted) WHERE id = ?", arguments: [id]).map(Attachment.init(row:))
    }

    func fetchAll(_ db: Database, states: [AttachmentState]? = nil) throws -> [Attachment] {
        if let states {
            let list = states.map { String($0.rawValue) }.joined(separator: ",")
            return try Row.fetchAll(db, sql: "SELECT * FROM \(quoted) WHERE state IN (\(list)) ORDER BY timestamp, id").map(Attachment.init(row:))
        }
        return try Row.fetchAll(db, sql: "SELECT * FROM \(quoted) ORDER BY timestamp, id").map(Attachment.init(row:))
    }

    func upsert(_ db: Database, _ a: Attachment) throws {
        try db.execute(sql: """
            INSERT INTO \(quoted) (id, filename, media_type, state, timestamp, size, has_synced, meta_data, local_uri)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET filename = excluded.filename, media_type = excluded.media_type, state = excluded.state,
              timestamp = excluded.timestamp, size = excluded.size, has_synced = excluded.has_synced, meta_data = excluded.meta_data,
              local_uri = excluded.local_uri
            """, arguments: [a.id, a.filename, a.mediaType, a.state.rawValue, a.timestamp, a.size, a.hasSynced, a.metaData, a.localURI])
    }

    /// Updates a record only while it is still in `expected`; returns whether it was.
    func update(_ db: Database, _ a: Attachment, ifStateIs expected: AttachmentState) throws -> Bool {
        try db.execute(sql: """
            UPDATE \(quoted) SET filename = ?, media_type = ?, state = ?, timestamp = ?, size = ?, has_synced = ?, meta_data = ?, local_uri = ?
            WHERE id = ? AND state = ?
            """, arguments: [a.filename, a.mediaType, a.state.rawValue, a.timestamp, a.size, a.hasSynced, a.metaData, a.localURI, a.id, expected.rawValue])
        return db.changesCount > 0
    }

    func delete(_ db: Database, id: String) throws {
        try db.execute(sql: "DELETE FROM \(quoted) WHERE id = ?", arguments: [id])
    }
}
