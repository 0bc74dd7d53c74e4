import GRDB

/// One byte range of a segmented download: `[start, end)` of the file, of which the first
/// `received` bytes are known to be in the partial file.
///
/// Persisted in `courierSegment` (one row per segment, deleted with its download), so a
/// relaunch resumes every segment where it stopped.
public struct Segment: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "courierSegment"

    /// The download the segment belongs to.
    public var downloadId: String
    /// The segment's number within its download (splits get new numbers).
    public var index: Int
    /// The first byte of the range.
    public var start: Int64
    /// One past the last byte of the range.
    public var end: Int64
    /// Bytes of the range written to the partial file (flushed; never more than written).
    public var received: Int64

    /// Makes a range `start..<end` of a download, with `received` of its bytes already written.
    public init(downloadId: String, index: Int, start: Int64, end: Int64, received: Int64 = 0) {
        self.downloadId = downloadId
        self.index = index
        self.start = start
        self.end = end
        self.received = received
    }

    /// The next byte to fetch.
    public var next: Int64 { start + received }
    /// Bytes still to fetch.
    public var remaining: Int64 { max(0, end - next) }
    /// Whether every byte of the range is in the file.
    public var isComplete: Bool { next >= end }
    /// The `Range` header that fetches the rest of the segment.
    public var rangeHeader: String { "bytes=\(next)-\(end - 1)" }

    public enum Columns {
        /// The owning download's id.
        public static let downloadId = Column(CodingKeys.downloadId)
        /// The range's position in the file (0 first).
        public static let index = Column(CodingKeys.index)
    }
}

/// The pure rules of splitting a file into segments (aria2's scheme: split at the start,
/// and when a connection frees up, split the largest remaining range in two).
public enum SegmentPlanner {
    /// The first split of a `total`-byte file for `connections` connections: as many equal
    /// ranges as there are connections, but none smaller than `minSize`. One segment means
    /// the file is too small to be worth splitting.
    public static func initial(downloadId: String, total: Int64, connections: Int, minSize: Int64) -> [Segment] {
        guard total > 0 else { return [] }
        let count = Int(max(1, min(Int64(max(1, connections)), total / max(1, minSize))))
        var segments: [Segment] = []
        var start: Int64 = 0
        for i in 0..<count {
            let end = i == count - 1 ? total : start + total / Int64(count)
            segments.append(Segment(downloadId: downloadId, index: i, start: start, end: end))
            start = end
        }
        return segments
    }

    /// When a connection frees up: the segment to shorten and the new segment made of its
    /// second half, taken from the segment with the most bytes remaining, provided each half
    /// keeps at least `minSize` bytes. `nil` when nothing is worth splitting.
    public static func split(_ segments: [Segment], minSize: Int64) -> (shortened: Segment, added: Segment)? {
        guard let largest = segments.filter({ !$0.isComplete }).max(by: { a, b in
            a.remaining != b.remaining ? a.remaining < b.remaining : a.index > b.index
        }), largest.remaining >= 2 * max(1, minSize) else { return nil }
        let middle = largest.next + largest.remaining / 2
        var shortened = largest
        shortened.end = middle
        let index = (segments.map(\.index).max() ?? 0) + 1
        return (shortened, Segment(downloadId: largest.downloadId, index: index, start: middle, end: largest.end))
    }

    /// Whether persisted segments describe a `total`-byte file exactly: ranges in order,
    /// without gap or overlap, covering `[0, total)`, each with a plausible `received`.
    public static func isConsistent(_ segments: [Segment], total: Int64) -> Bool {
        guard !segments.isEmpty else { return false }
        var position: Int64 = 0
        for s in segments.sorted(by: { $0.start < $1.start }) {
            guard s.start == position, s.end > s.start, s.received >= 0, s.received <= s.end - s.start else { return false }
            position = s.end
        }
        return position == total
    }
}
