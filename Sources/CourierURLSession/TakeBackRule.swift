/// Whether ``BackgroundTransfers/takeBack()`` leaves a download's running task to finish in
/// the system instead of cancelling it: when the task has received at least `share` of the
/// rest it asked for (cancelling it would throw that away). A task that has received
/// nothing, or whose reply did not say its length, is taken back: cancelling it throws
/// nothing away, or nothing known to be worth keeping.
public enum TakeBackRule {
    /// Whether a task that has `received` of the `expectedToReceive` bytes it asked for is left to finish (at least `share` of them arrived).
    public static func leavesToFinish(received: Int64, expectedToReceive: Int64, share: Double) -> Bool {
        guard received > 0, expectedToReceive > 0 else { return false }
        return Double(received) / Double(expectedToReceive) >= share
    }
}
