import ArgumentParser

/// An age on the command line: seconds, or with a unit (`90s`, `45m`, `12h`, `30d`, `2w`).
struct Age: ExpressibleByArgument, Equatable, CustomStringConvertible {
    let seconds: Int64

    init(seconds: Int64) { self.seconds = seconds }

    init?(argument: String) {
        var text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        var unit: Int64 = 1
        if let last = text.last, let multiple = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800][last] {
            unit = Int64(multiple)
            text.removeLast()
        }
        guard let value = Int64(text), value >= 0, value <= Int64.max / unit else { return nil }
        seconds = value * unit
    }

    var duration: Duration { .seconds(seconds) }
    var description: String { "\(seconds)s" }
}
