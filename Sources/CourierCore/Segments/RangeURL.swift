import Foundation

/// The URL every range of a segmented download asks, shared: after a 401/403/410 one fresh
/// URL is asked of the ``URLRefreshing`` hook (once per run, however many ranges were
/// denied at once), and every range goes on with it; denied again, the download fails.
actor RangeURL {
    /// Where ranges are asked now.
    private(set) var current: URL
    private var refresh: Task<URL?, any Error>?

    init(_ url: URL) { current = url }

    /// The URL to try after a request to `sent` was denied, or `nil` to give up.
    func afterDenial(of sent: URL, ask: @escaping @Sendable () async throws -> String?) async throws -> URL? {
        if sent != current { return current }          // another range already has a fresh one
        if let refresh {                              // one refresh per run: in flight, or done
            let fresh = try await refresh.value
            return fresh.flatMap { $0 != sent ? $0 : nil }
        }
        let task = Task { try await ask().map { try URLPolicy.validate($0) } }
        refresh = task
        let fresh = try await task.value
        if let fresh { current = fresh }
        return fresh
    }
}
