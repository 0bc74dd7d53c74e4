import Courier
import Foundation
import GRDB

/// PowerSync's `WatchOptions`: a query, its parameters, and a mapper from each row
/// (``SqlCursor``) to a value. `DatabaseWriter.watch(options:)` observes it.
public struct WatchOptions<RowType: Sendable>: Sendable {
    /// The query.
    public var sql: String
    /// Its parameters.
    public var parameters: [(any DatabaseValueConvertible & Sendable)?]
    /// Makes a value of each row.
    public var mapper: @Sendable (SqlCursor) throws -> RowType

    /// Makes the options.
    public init(sql: String, parameters: [(any DatabaseValueConvertible & Sendable)?] = [], mapper: @escaping @Sendable (SqlCursor) throws -> RowType) {
        self.sql = sql
        self.parameters = parameters
        self.mapper = mapper
    }
}

/// A row as PowerSync's mappers read it: by column name, with a clear error for a column
/// that is missing or NULL where a value is needed.
public struct SqlCursor {
    let row: Row

    /// The text in `name`; an integer is read as its digits.
    public func getString(name: String) throws -> String {
        guard let value = try getStringOptional(name: name) else { throw Self.missing(name) }
        return value
    }
    /// The text in `name`, or `nil` when NULL.
    public func getStringOptional(name: String) throws -> String? {
        switch try value(name).storage {
        case let .string(text): return text
        case let .int64(number): return String(number)
        case let .double(number): return String(number)
        case .null: return nil
        case .blob: throw CourierError(.invalidArgument, "column \(name) holds a blob, not text")
        }
    }
    /// The integer in `name`.
    public func getLong(name: String) throws -> Int {
        guard let value = try getLongOptional(name: name) else { throw Self.missing(name) }
        return value
    }
    /// The integer in `name`, or `nil` when NULL.
    public func getLongOptional(name: String) throws -> Int? {
        let v = try value(name)
        if v.isNull { return nil }
        guard let number = Int.fromDatabaseValue(v) else { throw CourierError(.invalidArgument, "column \(name) holds no integer") }
        return number
    }
    /// The number in `name`.
    public func getDouble(name: String) throws -> Double {
        let v = try value(name)
        guard let number = Double.fromDatabaseValue(v) else { throw Self.missing(name) }
        return number
    }
    /// The integer in `name` read as a Boolean (0 is false).
    public func getBoolean(name: String) throws -> Bool { try getLong(name: name) != 0 }

    private func value(_ name: String) throws -> DatabaseValue {
        guard row.hasColumn(name) else { throw CourierError(.invalidArgument, "the watched query has no column \(name)") }
        return row[name]
    }
    private static func missing(_ name: String) -> CourierError { CourierError(.invalidArgument, "column \(name) is NULL") }
}

/// A watched query: each change to the tables it reads emits every row, mapped. Each call
/// of ``values()`` observes anew, so a queue that stops and starts syncing watches again.
public struct WatchedQuery<RowType: Sendable>: Sendable {
    let writer: any DatabaseWriter
    let options: WatchOptions<RowType>

    /// The rows, mapped, now and after each change, until the stream is dropped.
    public func values() -> AsyncThrowingStream<[RowType], any Error> {
        let options = self.options, writer = self.writer
        let arguments = StatementArguments(options.parameters.map { $0?.databaseValue ?? .null })
        let observation = ValueObservation.tracking { db in
            try Row.fetchAll(db, sql: options.sql, arguments: arguments).map { try options.mapper(SqlCursor(row: $0)) }
        }
        return AttachmentQueue.stream(of: observation, in: writer)
    }
}

extension DatabaseWriter {
    /// PowerSync's `db.watch(options:)` over the app's GRDB database.
    public func watch<RowType: Sendable>(options: WatchOptions<RowType>) throws -> WatchedQuery<RowType> {
        WatchedQuery(writer: self, options: options)
    }
}
