/// The reply validators a run's current attempt holds and has not written yet (a small body
/// from zero records them with its completion, one write instead of two). A run stopped
/// midway hands them to the downloader, which records them with the pause or requeue, so
/// the bytes written so far resume with a range instead of being fetched again. Set when
/// an attempt's small body begins, cleared when an attempt begins and when the partial is
/// discarded; recording it again after a progress write is harmless (the same values).
final class UnsavedReply: Sendable {
    typealias Change = @Sendable (inout DownloadRecord) -> Void
    private let change = Locked<Change?>(nil)

    /// What the record lacks for the partial's bytes (`nil`: nothing; they were written).
    func set(_ change: Change?) { self.change.withLock { $0 = change } }

    /// The change, once.
    func take() -> Change? { change.withLock { value in defer { value = nil }; return value } }
}
