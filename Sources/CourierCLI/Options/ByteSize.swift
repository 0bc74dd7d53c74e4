import ArgumentParser

/// A size on the command line: bytes, or with a suffix as curl and aria2 take them
/// (`512K`, `10M`, `1.5G`, `2T`; binary multiples, `KiB`/`MB`/`k` spellings too).
struct ByteSize: ExpressibleByArgument, Equatable, CustomStringConvertible {
    let bytes: Int64

    init(bytes: Int64) { self.bytes = bytes }

    init?(argument: String) {
        var text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        if text.hasSuffix("b") { text.removeLast() }
        if text.hasSuffix("i") { text.removeLast() }
        var multiplier: Double = 1
        if let last = text.last, let power = ["k": 1, "m": 2, "g": 3, "t": 4][last] {
            multiplier = pow(1024, Double(power))
            text.removeLast()
        }
        guard !text.isEmpty, let value = Double(text), value >= 0, value.isFinite else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes < Double(Int64.max) else { return nil }
        self.bytes = Int64(bytes)
    }

    var description: String { String(bytes) }
    static var defaultCompletionKind: CompletionKind { .default }
}

import Foundation
