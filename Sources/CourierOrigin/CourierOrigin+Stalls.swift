import Foundation

extension CourierOrigin {
    /// Lets the reply to every request already received go on sending: one in its stall
    /// (``Fault/stallAfterBytes``, or before its head: ``Fault/headerDelaySeconds``) at once,
    /// one short of it without stalling. A test stalls a
    /// reply for as long as it needs, then lets it go when what it waits for has happened,
    /// instead of betting on how fast the loaded machine is, and whether the reply had
    /// reached its stall by then is no matter (it was: a reply not yet at its stall stalled
    /// later for its whole `stallSeconds`). Replies begun after this call stall as usual.
    public func endStalls() {
        state.withLockedValue { $0.stallsEnded += 1 }
    }

    /// A fault's stall: `seconds`, or until ``endStalls()`` is called after the reply began
    /// (`generation`: how many times it had been called when the request came), whichever comes first.
    func stallReply(for seconds: Double, since generation: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, state.withLockedValue({ $0.stallsEnded }) == generation {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
