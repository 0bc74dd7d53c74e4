import GRDB

extension DownloadRecord {
    /// Writes every column of this record over its row (found by ``id``), through one cached
    /// statement. What GRDB's `update(_:)` does, without building its SQL on every call: it
    /// asks for the table's columns, lowercases and intersects column names and compiles the
    /// statement each time — 5 % of the samples of a 2,000-file run, where the engine writes
    /// a record three times per file. Throws `RecordError.recordNotFound` when no row has
    /// this id, as `update(_:)` does.
    func updateRow(_ db: Database) throws {
        let values = try databaseDictionary
        let columns = values.keys.filter { $0 != "id" }.sorted()
        let sql = "UPDATE \(Self.databaseTableName) SET " + columns.map { "\"\($0)\" = ?" }.joined(separator: ", ") + " WHERE id = ?"
        var arguments = StatementArguments(columns.map { values[$0] ?? .null })
        arguments += [id]
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
        if db.changesCount == 0 {
            throw RecordError.recordNotFound(databaseTableName: Self.databaseTableName, key: ["id": id.databaseValue])
        }
    }
}
