/// A `Range: bytes=…` request header as the origin understands it (a single range).
enum ByteRangeRequest: Equatable {
    case from(Int64)              // bytes=N-
    case closed(Int64, Int64)     // bytes=N-M
    case suffix(Int64)            // bytes=-N

    init?(_ header: String) {
        let t = header.trimmingCharacters(in: .whitespaces)
        guard t.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = t.dropFirst(6)
        guard !spec.contains(",") else { return nil }
        let parts = spec.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let a = parts[0].trimmingCharacters(in: .whitespaces), b = parts[1].trimmingCharacters(in: .whitespaces)
        if a.isEmpty, let n = Int64(b), n > 0 { self = .suffix(n); return }
        guard let start = Int64(a), start >= 0 else { return nil }
        if b.isEmpty { self = .from(start); return }
        guard let end = Int64(b), end >= start else { return nil }
        self = .closed(start, end)
    }

    /// The inclusive bounds within a file of `size` bytes; `nil` when unsatisfiable.
    func resolve(size: Int64) -> (Int64, Int64)? {
        switch self {
        case let .from(s): return s < size ? (s, size - 1) : nil
        case let .closed(s, e): return s < size ? (s, min(e, size - 1)) : nil
        case let .suffix(n): return size > 0 ? (max(0, size - n), size - 1) : nil
        }
    }
}
