import Testing
@testable import CourierURLSession

/// Issue 48: the portable rules of a continued-processing task (which downloads, progress,
/// its end, the system's expiry), event by event.
@Suite struct ContinuedProcessingPlanTests {
    typealias Plan = ContinuedProcessingPlan

    @Test func progressIsEveryCoveredDownloadTogetherAndNeverPastTheWhole() {
        var plan = Plan([("a", 10, 100), ("b", 0, nil)])
        #expect(plan.started() == [.report(completed: 10, total: 101)])   // a size not known: what arrived and a byte more
        #expect(plan.progressed("b", received: 50, total: nil) == [.report(completed: 60, total: 151)])
        #expect(plan.progressed("a", received: 40, total: 100) == [.report(completed: 90, total: 151)])
        #expect(plan.progressed("a", received: 100, total: 100) == [.report(completed: 150, total: 152)], "never 100 % while one runs")
        #expect(plan.progressed("z", received: 5, total: 5) == [], "a download it does not cover changes nothing")
        #expect(plan.running == ["a", "b"])
    }

    @Test func itEndsWhenEveryCoveredDownloadEndedOrWentToTheSystem() {
        var plan = Plan([("a", 0, 100), ("b", 0, 200)])
        _ = plan.started()
        #expect(plan.ended("a", completed: 100) == [.report(completed: 100, total: 300)])
        #expect(plan.handedOff("b") == [.end(success: true)], "the system carries the last one")
        #expect(plan.ended && plan.expired() == [] && plan.progressed("b", received: 1, total: 200) == [])
    }

    @Test func oneFailureEndsItAsAFailure() {
        var plan = Plan([("a", 0, 100), ("b", 0, 100)])
        _ = plan.ended("a", completed: nil)
        #expect(plan.ended("b", completed: 100) == [.report(completed: 100, total: 100), .end(success: false)])
    }

    @Test func theExpiryYieldsWhatStillRunsThenEndsAsAFailure() {
        var plan = Plan([("a", 0, 100), ("b", 5, 100), ("c", 0, 10)])
        _ = plan.ended("c", completed: 10)
        #expect(plan.expired() == [.yield(["a", "b"]), .end(success: false)])
        #expect(plan.expired() == [] && plan.ended("a", completed: 100) == [])
    }

    @Test func nothingToCoverEndsAtOnce() {
        var plan = Plan([])
        #expect(plan.started() == [.report(completed: 0, total: 0), .end(success: true)])
    }

    @Test func uploadsCountWithTheDownloadsAndEndWhenTheirRecordsGo() {
        var plan = Plan([("a", 0, 100)], uploads: [("attachment:v", 10, 50)])
        #expect(plan.started() == [.report(completed: 10, total: 150)])
        #expect(plan.uploadProgressed("attachment:v", confirmed: 10) == [], "nothing new")
        #expect(plan.uploadProgressed("attachment:v", confirmed: 40) == [.report(completed: 40, total: 150)])
        #expect(plan.ended("a", completed: 100) == [.report(completed: 140, total: 150)], "the upload still runs")
        #expect(plan.uploadEnded("attachment:v", completed: true) == [.report(completed: 150, total: 150), .end(success: true)])
    }

    @Test func theExpiryYieldsTheUploadsToo() {
        var plan = Plan([], uploads: [("attachment:v", 0, 50)])
        #expect(plan.expired() == [.yieldUploads, .end(success: false)])
    }
}
