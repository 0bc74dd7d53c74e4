import Foundation

/// The URL every range of one segmented attempt asks, shared: after a 401/403/410 the
/// run's ``RangeRefresh`` gives a fresh URL, and every range goes on with it; a fresh URL
/// denied before it served a range fails the download.
actor RangeURL {
    /// Where ranges are asked now.
    private(set) var current: URL
    private let refresh: RangeRefresh

    init(_ url: URL, refresh: RangeRefresh) {
        current = url
        self.refresh = refresh
    }

    /// The URL to try after a request to `sent` was denied, or `nil` to give up.
    func afterDenial(of sent: URL, ask: @escaping @Sendable () async throws -> String?) async throws -> URL? {
        if sent != current { return current }          // another range already has a fresh one
        guard let fresh = try await refresh.answer(afterDenialOf: sent, ask), fresh != sent else { return nil }
        current = fresh
        return fresh
    }

    /// A range's bytes came from `sent`.
    func served(by sent: URL) async { await refresh.served(by: sent) }
}

/// The URL refresher's answers for one run's ranges. It is asked once per denial, however
/// many ranges (of however many of the run's attempts) were denied: again only when the
/// URL it gave was denied after it had served ranges (a presigned link that expired during a
/// long download), never in a loop (one denied before serving anything ends the download).
/// The latest answer serves the run's next attempts.
actor RangeRefresh {
    private var asked: Task<URL?, any Error>?
    /// The latest fresh URL, how many have been given in this run, and how many of them the
    /// run has taken for its next attempt.
    private(set) var fresh: URL?
    private(set) var given = 0
    private var taken = 0
    /// `fresh` has served a range since it was given.
    private var worked = false

    /// The fresh URL after a denial of `sent`: the answer already given (or being asked),
    /// unless `sent` is that answer and it had worked; then the refresher is asked again.
    func answer(afterDenialOf sent: URL, _ ask: @escaping @Sendable () async throws -> String?) async throws -> URL? {
        if let asked, !(worked && sent == fresh) { return try await asked.value }
        let task = EngineExecutor.current.throwingTask { try await ask().map { try URLPolicy.validate($0) } }
        asked = task
        worked = false
        let url = try await task.value
        if let url {
            fresh = url
            given += 1
        }
        return url
    }

    /// A fresh URL the ranges got since the run last took one, for its next attempt.
    func take() -> URL? {
        guard given != taken else { return nil }
        taken = given
        return fresh
    }

    /// A range's bytes came from `url`.
    func served(by url: URL) {
        if url == fresh { worked = true }
    }

    /// The run's own refresh (a denial of its first request) gave `url`: ranges go on with it.
    func adopt(_ url: URL) {
        asked = EngineExecutor.current.throwingTask { url }
        fresh = url
        worked = false
        given += 1
        taken = given
    }
}
