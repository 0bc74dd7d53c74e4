/// One at a time per key, in order of arrival, for steps of an actor that wait in between
/// (a splice on the disk, a call to the engine) where another step of the same key would
/// slip in. Used from its owner's isolation only.
package final class TurnsByKey {
    /// Keys with a step under way, and the steps waiting for each.
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    package init() {}

    /// Whether a step of `key` is under way.
    package func isBusy(_ key: String) -> Bool { waiting[key] != nil }

    /// Runs `body` once the steps of `key` before it have ended; the turn passes to the next
    /// waiter when it ends, thrown or not.
    package func run<T>(_ key: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        if waiting[key] != nil {
            await withCheckedContinuation(isolation: isolation) { waiting[key, default: []].append($0) }   // handed the turn by the step before
        } else {
            waiting[key] = []
        }
        defer {
            if var queue = waiting[key], !queue.isEmpty {
                let next = queue.removeFirst()
                waiting[key] = queue
                next.resume()
            } else {
                waiting[key] = nil
            }
        }
        return try await body()
    }
}
