import Foundation

/// A parsed `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
public enum RetryAfter {
    /// The delay in seconds from `now` that the header asks for, never negative.
    /// Throws ``CourierError/Code/malformedHeader`` for anything else, including
    /// negative numbers, fractions and absurd values.
    public static func parse(_ value: String, now: Date = Date()) throws -> TimeInterval {
        let t = value.trimmingHTTPWhitespace()
        if let seconds = HTTPNumber.parse(t) {
            return TimeInterval(seconds)
        }
        if let date = HTTPDate.parse(t) {
            return max(0, date.timeIntervalSince(now))
        }
        throw CourierError(.malformedHeader, "malformed Retry-After: \(value.prefix(80).debugDescription)")
    }
}
