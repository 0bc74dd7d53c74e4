import Foundation
import GRDB
import Testing
@testable import CourierCore

/// Courier's ICU-free date text must be GRDB's, byte for byte, both ways.
@Suite struct DatabaseDateTests {
    @Test func matchesGRDBsFormatBothWays() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let ms = Double(Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &rng)) / 1000
            let date = Date(timeIntervalSince1970: ms)
            let ours = DatabaseDate.text(date)
            let grdb = String.fromDatabaseValue(date.databaseValue)
            #expect(ours == grdb, "\(ms)")
            let back = try #require(DatabaseDate.parse(ours))
            #expect(abs(back.timeIntervalSince1970 - ms) < 0.0005)
            #expect(Date.fromDatabaseValue(ours.databaseValue).map { abs($0.timeIntervalSince(back)) < 0.0005 } == true)
        }
    }

    @Test func parsesSQLiteFormsAndRefusesGarbage() {
        #expect(DatabaseDate.parse("2026-11-23") == Date(timeIntervalSince1970: 1_795_392_000))
        #expect(DatabaseDate.parse("2026-11-23T03:20") == Date(timeIntervalSince1970: 1_795_392_000 + 3 * 3600 + 20 * 60))
        #expect(DatabaseDate.parse("2026-11-23 03:20:33.5") == Date(timeIntervalSince1970: 1_795_392_000 + 3 * 3600 + 20 * 60 + 33.5))
        for bad in ["", "2026", "2026-13-01", "2026-11-23 25:00", "2026-11-23 03:20:", "2026-11-23 03:20:33.", "x026-11-23", "2026-11-23 03:20:33Z"] {
            #expect(DatabaseDate.parse(bad) == nil, "\(bad)")
        }
        #expect(DatabaseDate.parse(DatabaseValue(value: 12.5)!) == Date(timeIntervalSince1970: 12.5))
    }

    /// A date column another program filled with an absurd number: read, then written again
    /// (every update re-encodes the record's dates), it is clamped to the format's years.
    @Test func anAbsurdDateIsWrittenClampedNotACrash() throws {
        for (value, late) in [(1e300.databaseValue, true), ((-1e300).databaseValue, false), (Double.infinity.databaseValue, true), (Int64.max.databaseValue, true)] {
            let date = try #require(DatabaseDate.parse(value))
            let text = DatabaseDate.text(date)
            #expect(text == (late ? "9999-12-31 23:59:59.000" : "0000-01-01 00:00:00.000"), "\(value): \(text)")
        }
        #expect(DatabaseDate.text(Date(timeIntervalSince1970: .nan)) == "1970-01-01 00:00:00.000")
    }
}
