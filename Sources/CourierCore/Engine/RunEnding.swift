import Foundation

/// Who ends a run when its body and its lease heartbeat both could (``DownloadRun/ending``):
/// the body completing the record, or the heartbeat stopping the run for `lost`.
struct RunEnding: Sendable {
    enum Claimant: Sendable { case completing, stopping }
    private(set) var holder: Claimant?
    private(set) var lost: (any Error)?

    /// Takes the end for `claimant` unless the other one holds it; true when taken.
    mutating func claim(_ claimant: Claimant) -> Bool {
        if let holder, holder != claimant { return false }
        holder = claimant
        return true
    }

    /// The heartbeat's claim, with its reason; true when taken.
    mutating func stop(for error: any Error) -> Bool {
        guard claim(.stopping) else { return false }
        lost = error
        return true
    }

    /// The body's completion did not happen (nothing completed, or it failed): open again.
    mutating func release() { if holder == .completing { holder = nil } }
}
