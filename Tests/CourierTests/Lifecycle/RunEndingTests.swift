import Testing
@testable import CourierCore

/// Who ends a run when its body and its lease heartbeat both could (`RunEnding`): the first
/// claim holds, the other is refused, and a completion that did not happen opens it again.
@Suite struct RunEndingTests {
    struct Lost: Error, Equatable { let why: String }

    @Test func theFirstClaimHolds() {
        var ending = RunEnding()
        let completing = ending.claim(.completing)
        let stoppedToo = ending.stop(for: Lost(why: "taken over"))
        #expect(completing && !stoppedToo, "the heartbeat stopped a run that was completing")
        #expect(ending.holder == .completing && ending.lost == nil)

        var stopped = RunEnding()
        let stopping = stopped.stop(for: Lost(why: "taken over"))
        let completedToo = stopped.claim(.completing)
        #expect(stopping && !completedToo, "a run completed after the heartbeat stopped it")
        #expect(stopped.holder == .stopping && (stopped.lost as? Lost) == Lost(why: "taken over"))
    }

    @Test func aClaimantMayClaimAgain() {
        var ending = RunEnding()
        let first = ending.claim(.completing), second = ending.claim(.completing)
        #expect(first && second)
        var stopped = RunEnding()
        let a = stopped.stop(for: Lost(why: "a")), b = stopped.stop(for: Lost(why: "b"))
        #expect(a && b && (stopped.lost as? Lost) == Lost(why: "b"))
    }

    /// A completion that failed (or completed nothing) gives the end back, so the heartbeat
    /// can stop the run again; a stop is never given back.
    @Test func onlyACompletionIsReleased() {
        var ending = RunEnding()
        let completing = ending.claim(.completing)
        ending.release()
        #expect(completing && ending.holder == nil)
        let stopping = ending.stop(for: Lost(why: "taken over"))
        #expect(stopping)

        var stopped = RunEnding()
        let stoppedFirst = stopped.stop(for: Lost(why: "taken over"))
        stopped.release()
        let completedAfter = stopped.claim(.completing)
        #expect(stoppedFirst && stopped.holder == .stopping && !completedAfter)
    }
}
