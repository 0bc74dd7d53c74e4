
/// The live state of a segmented run's byte ranges, shared by its connections and its
/// persister: each segment's range, the bytes written to the file (`received`, what is
/// persisted), and the position reached in memory (which a split must stay ahead of).
final class SegmentBoard: Sendable {
    private struct State {
        var segments: [Int: Segment]
        var position: [Int: Int64]
        var busy: Set<Int> = []
    }
    private let state: Locked<State>

    init(_ segments: [Segment]) {
        state = Locked(State(segments: Dictionary(uniqueKeysWithValues: segments.map { ($0.index, $0) }),
                            position: Dictionary(uniqueKeysWithValues: segments.map { ($0.index, $0.next) })))
    }

    /// Every segment, by start offset.
    var snapshot: [Segment] { state.withLock { $0.segments.values.sorted { $0.start < $1.start } } }
    /// Bytes written to the file, over all segments.
    var received: Int64 { state.withLock { $0.segments.values.reduce(0) { $0 + $1.received } } }
    var allComplete: Bool { state.withLock { $0.segments.values.allSatisfy(\.isComplete) } }

    func segment(_ index: Int) -> Segment? { state.withLock { $0.segments[index] } }

    /// The current end of a segment's range (a split may have moved it closer).
    func end(of index: Int) -> Int64 { state.withLock { $0.segments[index]?.end ?? 0 } }

    /// Records the position reached in memory, and the bytes flushed to the file.
    func advance(_ index: Int, position: Int64, flushed: Int64) {
        state.withLock { s in
            guard var seg = s.segments[index] else { return }
            s.position[index] = position
            seg.received = max(seg.received, min(flushed, seg.end) - seg.start)
            s.segments[index] = seg
        }
    }

    /// Takes an incomplete segment no connection works on; marks it busy.
    func claimIdle() -> Segment? {
        state.withLock { s in
            guard let seg = s.segments.values.filter({ !$0.isComplete && !s.busy.contains($0.index) }).min(by: { $0.start < $1.start }) else { return nil }
            s.busy.insert(seg.index)
            return seg
        }
    }

    func release(_ index: Int) { state.withLock { _ = $0.busy.remove(index) } }

    /// Splits the busy segment with the most bytes ahead of its connection in two (aria2's
    /// re-split when a connection frees up); the new half is returned marked busy. The split
    /// point is computed from the in-memory position, so the running connection never has
    /// to give back bytes it already holds.
    func splitForIdleConnection(minSize: Int64) -> Segment? {
        state.withLock { s in
            let live = s.segments.values.map { seg -> Segment in
                var v = seg
                v.received = min(seg.end, max(seg.next, s.position[seg.index] ?? seg.next)) - seg.start
                return v
            }
            guard let (shortened, added) = SegmentPlanner.split(live, minSize: minSize),
                  var original = s.segments[shortened.index] else { return nil }
            original.end = shortened.end
            s.segments[original.index] = original
            s.segments[added.index] = added
            s.position[added.index] = added.start
            s.busy.insert(added.index)
            return added
        }
    }
}
