import Courier
import Foundation
import GRDB
import Testing
@testable import CourierDocuments

/// The document mirror's sync rows, as another program may leave them (a text where a
/// number goes): read with an error, never a trap.
@Suite struct SyncRowTests {
    @Test func aRowOfTheWrongTypesIsAnErrorNotACrash() async throws {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sync-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: file) }
        let database = try CourierDatabase(path: file.path)
        let store = try DocumentSyncStore(database: database)
        _ = try await store.noteWritten("a.txt", firstBase: "")
        #expect(try await store.row("a.txt")?.generation == 1)
        try await database.writer.write { db in try db.execute(sql: "UPDATE courierDocumentSync SET generation = 'one', attempts = x'00'") }
        await #expect(throws: (any Error).self) { _ = try await store.row("a.txt") }
        await #expect(throws: (any Error).self) { _ = try await store.all() }
    }
}
