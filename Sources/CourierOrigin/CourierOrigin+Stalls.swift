import Foundation

extension CourierOrigin {
    /// Ends every stall in progress at once (``Fault/stallAfterBytes``): their replies go on
    /// sending. A test stalls a reply for as long as it needs, then lets it go when what it
    /// waits for has happened, instead of betting on how fast the loaded machine is.
    public func endStalls() {
        state.withLockedValue { $0.stallsEnded += 1 }
    }

    /// A fault's stall: `seconds`, or until ``endStalls()``, whichever comes first.
    func stallReply(for seconds: Double) async throws {
        let generation = state.withLockedValue { $0.stallsEnded }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, state.withLockedValue({ $0.stallsEnded }) == generation {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
