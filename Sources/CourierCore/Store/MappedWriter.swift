import GRDB

/// A GRDB writer whose failures leave as ``CourierError/Code/database`` (the native error
/// kept as `underlying`; a ``CourierError`` thrown inside passes as is): the database
/// boundary of every target of the package.
package struct MappedWriter: Sendable {
    /// The writer underneath, for what needs GRDB itself (observations).
    package let writer: any DatabaseWriter

    package init(_ writer: any DatabaseWriter) { self.writer = writer }

    /// Runs a write transaction.
    package func write<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            if EngineExecutor.current.runsInline { return try Self.writeInline(writer, body) }   // the simulator: on its one thread
            return try await writer.write(body)
        } catch let e as CourierError { throw e } catch {
            throw Self.mapped(error, "database write failed")
        }
    }

    /// Runs a write transaction that is on stable storage when this returns, whatever the
    /// connection's `synchronous` setting: with WAL and NORMAL (Courier's own databases) a
    /// power cut may take the last commits back, which is right for progress but not for a
    /// handle the server will hold on to (an S3 upload id: lost, it leaves an upload nobody
    /// completes or aborts). The setting is put back as it was (an app's connection).
    /// It runs to its end even when the caller is cancelled (a task of its own): GRDB
    /// interrupts a cancelled task's statements, which would leave the setting at FULL and
    /// every later commit synced. The caller sees its cancellation at its next step.
    package func writeDurably<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        let writer = self.writer
        do {
            if EngineExecutor.current.runsInline { return try Self.durablyInline(writer, body) }   // the simulator: on its one thread
            return try await EngineExecutor.current.throwingTask { try await Self.durably(writer, body) }.value
        } catch let e as CourierError { throw e } catch {
            throw Self.mapped(error, "database write failed")
        }
    }

    private static func durably<T: Sendable>(_ writer: any DatabaseWriter, _ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await writer.writeWithoutTransaction { db in try fullySynced(db, body) }
    }

    /// One transaction committed with `synchronous = FULL`, the connection's setting put back
    /// after it.
    private static func fullySynced<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        let before = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 2
        if before < 2 { try db.execute(sql: "PRAGMA synchronous = FULL") }
        defer {
            // The commit is durable already; a setting not put back only syncs more.
            if before < 2 { try? db.execute(sql: "PRAGMA synchronous = \(before)") }
        }
        var result: T?
        try db.inTransaction {
            result = try body(db)
            return .commit
        }
        return result!
    }

    /// GRDB's blocking write and read (from a function that is not async, so the blocking
    /// overloads are the ones chosen), for the simulator: on its one thread.
    private static func writeInline<T: Sendable>(_ writer: any DatabaseWriter, _ body: @Sendable @escaping (Database) throws -> T) throws -> T {
        try writer.write(body)
    }

    private static func readInline<T: Sendable>(_ writer: any DatabaseWriter, _ body: @Sendable @escaping (Database) throws -> T) throws -> T {
        try writer.read(body)
    }

    /// The same, on the caller's thread (the simulator's).
    private static func durablyInline<T: Sendable>(_ writer: any DatabaseWriter, _ body: @Sendable @escaping (Database) throws -> T) throws -> T {
        try writer.writeWithoutTransaction { db in try fullySynced(db, body) }
    }

    /// Runs a read.
    package func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            if EngineExecutor.current.runsInline { return try Self.readInline(writer, body) }   // the simulator: on its one thread
            return try await writer.read(body)
        } catch let e as CourierError { throw e } catch {
            throw Self.mapped(error, "database read failed")
        }
    }

    /// A cancelled task's access (GRDB throws `CancellationError`, or interrupts it) stays a
    /// cancellation: the caller was stopped, the database did not fail.
    private static func mapped(_ error: any Error, _ message: String) -> any Error {
        if error is CancellationError { return error }
        if Task.isCancelled, let e = error as? DatabaseError, e.resultCode == .SQLITE_INTERRUPT { return CancellationError() }
        return CourierError(.database, message, underlying: error)
    }
}
