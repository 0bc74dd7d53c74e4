import Foundation

/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// Parses any of the three forms; `nil` when the text is not a valid date.
    public static func parse(_ text: String) -> Date? {
        let t = text.trimmingHTTPWhitespace()
        guard t.utf8.count <= 64 else { return nil }
        let parts = t.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: String?
        if parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT" {
            // Sun, 06 Nov 1994 08:49:37 GMT
            day = Int(parts[1]); month = monthIndex(parts[2]); year = Int(parts[3]); time = parts[4]
            guard parts[1].count == 2, parts[3].count == 4 else { return nil }
        } else if parts.count == 4, parts[0].hasSuffix(","), parts[3] == "GMT" {
            // Sunday, 06-Nov-94 08:49:37 GMT
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, let yy = Int(dmy[2]), dmy[2].count == 2 else { return nil }
            day = Int(dmy[0]); month = monthIndex(dmy[1]); year = yy < 70 ? 2000 + yy : 1900 + yy; time = parts[2]
        } else if parts.count == 5, days.contains(parts[0]) {
            // Sun Nov  6 08:49:37 1994
            month = monthIndex(parts[1]); day = Int(parts[2]); time = parts[3]; year = Int(parts[4])
            guard parts[4].count == 4 else { return nil }
        } else {
            return nil
        }
        guard let day, let month, let year, let time, (1...31).contains(day), (1...9999).contains(year) else { return nil }
        let hms = time.split(separator: ":").map(String.init)
        guard hms.count == 3, hms.allSatisfy({ $0.count == 2 }),
              let h = Int(hms[0]), let m = Int(hms[1]), let s = Int(hms[2]),
              (0...23).contains(h), (0...59).contains(m), (0...60).contains(s) else { return nil }
        var comps = DateComponents()
        comps.year = year; comps.month = month + 1; comps.day = day
        comps.hour = h; comps.minute = m; comps.second = s
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "GMT")!
        guard let date = cal.date(from: comps) else { return nil }
        // Reject dates like 31 Feb that the calendar rolls over.
        guard cal.component(.day, from: date) == day else { return nil }
        return date
    }

    /// Formats a date as IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ date: Date) -> String {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "GMT")!
        let c = cal.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        func two(_ v: Int?) -> String { let v = v ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        let monthName = months[(c.month ?? 1) - 1].capitalized
        return "\(days[(c.weekday ?? 1) - 1]), \(two(c.day)) \(monthName) \(c.year ?? 1970) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }

    private static func monthIndex(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased())
    }
}
