import CourierTestSupport
import Foundation
import GRDB
import Testing
@testable import CourierCore

/// Two processes opening one new database at once (an app and its extension, two `courier`
/// commands): both read that no migration is applied, the first runs them, and the second
/// must not fail on the tables the first just made. CI saw it once, as `courier get` exiting
/// with "E_DATABASE: cannot prepare Courier's tables" beside a `courier status` loop.
@Suite struct MigrationRaceTests {
    /// The second opener read the applied migrations (none), then waited for the write lock
    /// the first held while it made every table; the first commits while the second waits
    /// (inside its busy handler, so the order is fixed, not timed).
    @Test func aDatabaseMigratedByAnotherProcessMeanwhileOpens() throws {
        let path = temporaryFolder("migration-race").appendingPathComponent("courier.sqlite").path
        // The first process: the file in WAL mode, GRDB's table of migrations, and the write
        // lock, held.
        var firstConfig = Configuration()
        firstConfig.allowsUnsafeTransactions = true
        let first = try DatabaseQueue(path: path, configuration: firstConfig)
        try first.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            try db.execute(sql: "BEGIN IMMEDIATE")
        }
        // What the first process's migrations make, read from a database migrated alone.
        let template = try DatabaseQueue()
        _ = try CourierDatabase(writer: template)
        let (schema, applied) = try template.read { db in
            (try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations' ORDER BY rowid"),
             try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        }
        #expect(!schema.isEmpty && applied.count == CourierDatabase.migrator.migrations.count)

        // The second process waits for the lock: the first makes every table then and commits.
        let committed = Locked(false)
        var secondConfig = Configuration()
        secondConfig.busyMode = .callback { _ in
            if !committed.withLock({ $0 }) {
                committed.withLock { $0 = true }
                try? first.writeWithoutTransaction { db in   // a failure shows below: the second finds no tables
                    for statement in schema { try db.execute(sql: statement) }
                    for identifier in applied { try db.execute(sql: "INSERT INTO grdb_migrations VALUES (?)", arguments: [identifier]) }
                    try db.execute(sql: "COMMIT")
                }
            }
            return true
        }
        let second = try DatabasePool(path: path, configuration: secondConfig)
        let database = try CourierDatabase(writer: second)
        #expect(committed.withLock { $0 }, "the second opener never waited for the first: the race was not reached")
        #expect(try second.read { try CourierDatabase.migrator.hasCompletedMigrations($0) })
        // And it works: a record written and read back.
        try database.writer.write { db in
            try #expect(Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(DownloadRecord.databaseTableName)") == 0)
        }
    }

    /// A failure of its own (no other process moved the migrations on) still fails, with the
    /// code: a file that is not a database.
    @Test func aFailureNoOtherProcessExplainsStillFails() throws {
        let path = temporaryFolder("migration-own-failure").appendingPathComponent("courier.sqlite").path
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        #expect { try CourierDatabase(path: path) } throws: { ($0 as? CourierError)?.code == .database }
    }
}
