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
        do { return try await writer.write(body) } catch let e as CourierError { throw e } catch {
            throw Self.mapped(error, "database write failed")
        }
    }

    /// Runs a read.
    package func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do { return try await writer.read(body) } catch let e as CourierError { throw e } catch {
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
