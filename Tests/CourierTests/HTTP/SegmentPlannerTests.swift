import Testing
@testable import CourierCore

@Suite struct SegmentPlannerTests {
    @Test func initialSplitCoversTheFileInEqualRanges() {
        let s = SegmentPlanner.initial(downloadId: "d", total: 1000, connections: 4, minSize: 100)
        #expect(s.map(\.start) == [0, 250, 500, 750])
        #expect(s.map(\.end) == [250, 500, 750, 1000])
        #expect(SegmentPlanner.isConsistent(s, total: 1000))
        // An odd size: the last range takes the rest.
        let odd = SegmentPlanner.initial(downloadId: "d", total: 1003, connections: 4, minSize: 1)
        #expect(odd.last?.end == 1003 && SegmentPlanner.isConsistent(odd, total: 1003))
    }

    @Test func smallFilesAreNotSplit() {
        #expect(SegmentPlanner.initial(downloadId: "d", total: 150, connections: 8, minSize: 100).count == 1)
        #expect(SegmentPlanner.initial(downloadId: "d", total: 399, connections: 8, minSize: 100).count == 3)
        #expect(SegmentPlanner.initial(downloadId: "d", total: 0, connections: 4, minSize: 1).isEmpty)
        #expect(SegmentPlanner.initial(downloadId: "d", total: 10, connections: 0, minSize: 1).count == 1)
    }

    @Test func splitTakesTheLargestRemainingRangeInTwo() throws {
        var s = SegmentPlanner.initial(downloadId: "d", total: 1000, connections: 2, minSize: 100)
        s[0].received = 500          // done
        s[1].received = 100          // 400 left: [600, 1000)
        let (shortened, added) = try #require(SegmentPlanner.split(s, minSize: 100))
        #expect(shortened.index == 1 && shortened.start == 500 && shortened.end == 800)
        #expect(added.index == 2 && added.start == 800 && added.end == 1000 && added.received == 0)
        s[1] = shortened
        s.append(added)
        #expect(SegmentPlanner.isConsistent(s, total: 1000))
    }

    @Test func splitRefusesRangesTooSmallToShare() {
        var s = SegmentPlanner.initial(downloadId: "d", total: 1000, connections: 2, minSize: 100)
        s[0].received = 500
        s[1].received = 320           // 180 left < 2 × 100
        #expect(SegmentPlanner.split(s, minSize: 100) == nil)
        s[1].received = 500
        #expect(SegmentPlanner.split(s, minSize: 1) == nil)   // all complete
    }

    @Test func consistencyCatchesGapsOverlapsAndLies() {
        let ok = [Segment(downloadId: "d", index: 0, start: 0, end: 10), Segment(downloadId: "d", index: 1, start: 10, end: 20, received: 10)]
        #expect(SegmentPlanner.isConsistent(ok, total: 20))
        #expect(!SegmentPlanner.isConsistent(ok, total: 21))
        #expect(!SegmentPlanner.isConsistent([ok[0], Segment(downloadId: "d", index: 1, start: 11, end: 20)], total: 20))
        #expect(!SegmentPlanner.isConsistent([ok[0], Segment(downloadId: "d", index: 1, start: 9, end: 20)], total: 20))
        #expect(!SegmentPlanner.isConsistent([ok[0], Segment(downloadId: "d", index: 1, start: 10, end: 20, received: 11)], total: 20))
        #expect(!SegmentPlanner.isConsistent([], total: 0))
    }
}
