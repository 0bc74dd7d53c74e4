import Foundation

/// The URL every range of one segmented attempt asks, shared: after a 401/403/410 the
/// run's ``RangeRefresh`` gives one fresh URL, and every range goes on with it; denied
/// again, the download fails.
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
        guard let fresh = try await refresh.answer(ask), fresh != sent else { return nil }
        current = fresh
        return fresh
    }
}

/// The URL refresher asked for a denied range at most once in a run, however many ranges,
/// and however many of the run's attempts, were denied. Its answer is kept: the run's next
/// attempt asks the fresh URL, not the one that was denied.
actor RangeRefresh {
    private var asked: Task<URL?, any Error>?

    /// The fresh URL, once the refresher gave one.
    private(set) var fresh: URL?

    /// The refresher's answer: asked now if it never was in this run, else the first answer.
    func answer(_ ask: @escaping @Sendable () async throws -> String?) async throws -> URL? {
        if let asked { return try await asked.value }
        let task = Task { try await ask().map { try URLPolicy.validate($0) } }
        asked = task
        let url = try await task.value
        fresh = url
        return url
    }
}
