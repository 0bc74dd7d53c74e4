import Foundation
import GRDB

/// Dates as Courier stores them: GRDB's text format, `yyyy-MM-dd HH:mm:ss.SSS` in UTC
/// (so databases written before stay readable, and SQLite's date functions work), but
/// formatted and parsed with plain arithmetic.
///
/// GRDB's default goes through `DateFormatter` and `Calendar`, which load ICU's tables:
/// about 5 MiB of resident memory and a few microseconds per progress write, for a format
/// that never changes.
package enum DatabaseDate {
    /// `2026-11-23 03:20:33.065`.
    package static func text(_ date: Date) -> String {
        // Years 0000 to 9999 (the format's four digits): a date read from a row another program
        // wrote (1e300, infinity) trapped converting to time_t.
        let raw = date.timeIntervalSince1970
        let interval = raw.isNaN ? 0 : min(max(raw, -62_167_219_200), 253_402_300_799)
        var seconds = time_t(interval.rounded(.down))
        var millis = Int(((interval - Double(seconds)) * 1000).rounded())
        if millis == 1000 { seconds += 1; millis = 0 }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2)) "
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))"
    }

    /// Parses `yyyy-MM-dd[ HH:mm[:ss[.SSS]]]` (a `T` may separate date and time), UTC; or
    /// a number of seconds since 1970. `nil` for anything else.
    static func parse(_ value: DatabaseValue) -> Date? {
        switch value.storage {
        case let .double(d): return Date(timeIntervalSince1970: d)
        case let .int64(i): return Date(timeIntervalSince1970: Double(i))
        case let .string(s): return parse(s)
        default: return nil
        }
    }

    package static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var i = 0
        func number(_ digits: Int) -> Int? {
            guard i + digits <= bytes.count else { return nil }
            var n = 0
            for _ in 0..<digits {
                let b = bytes[i]
                guard b >= 48, b <= 57 else { return nil }
                n = n * 10 + Int(b - 48); i += 1
            }
            return n
        }
        func expect(_ c: UInt8) -> Bool { if i < bytes.count, bytes[i] == c { i += 1; return true }; return false }
        guard let year = number(4), expect(45), let month = number(2), expect(45), let day = number(2),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        var hour = 0, minute = 0, second = 0
        var fraction = 0.0
        if i < bytes.count {
            guard expect(32) || expect(84), let h = number(2), expect(58), let m = number(2), h < 24, m < 60 else { return nil }
            hour = h; minute = m
            if expect(58) {
                guard let s = number(2), s < 61 else { return nil }
                second = s
                if expect(46) {
                    var scale = 0.1
                    let start = i
                    while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { fraction += Double(bytes[i] - 48) * scale; scale /= 10; i += 1 }
                    guard i > start else { return nil }
                }
            }
        }
        guard i == bytes.count else { return nil }
        // Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second) + fraction
        return Date(timeIntervalSince1970: seconds)
    }
}
