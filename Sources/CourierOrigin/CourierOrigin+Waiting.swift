import Foundation

extension CourierOrigin {
    /// A test waiting for the request log to reach a state (``waitForRequests(within:until:)``).
    struct RequestWatcher {
        let condition: @Sendable ([OriginRequest]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    /// Returns `true` once the request log (``requests``) satisfies `condition`: checked at
    /// once, then each time a request arrives or its record changes (its status, the body
    /// bytes it has sent). A test waits for what the server saw instead of polling on a wall
    /// clock. `false` when `within` passes first or the origin stops: that limit only ends a
    /// wait that failed.
    public func waitForRequests(within limit: Duration = .seconds(60), until condition: @escaping @Sendable ([OriginRequest]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLockedValue { s in
                if condition(s.log.map(\.request)) { return nil }
                s.nextWatcher += 1
                s.watchers[s.nextWatcher] = RequestWatcher(condition: condition, continuation: continuation)
                return s.nextWatcher
            }
            guard let id else { return continuation.resume(returning: true) }
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [state] in
                state.withLockedValue { $0.watchers.removeValue(forKey: id) }?.continuation.resume(returning: false)
            }
        }
    }

    /// Changes the request log under the lock, then wakes the watchers it now satisfies.
    func changeLog<T>(_ body: (inout OriginState) -> T) -> T {
        let (result, woken) = state.withLockedValue { s -> (T, [RequestWatcher]) in
            let result = body(&s)
            guard !s.watchers.isEmpty else { return (result, []) }
            let log = s.log.map(\.request)
            let ids = s.watchers.filter { $0.value.condition(log) }.map(\.key)
            return (result, ids.compactMap { s.watchers.removeValue(forKey: $0) })
        }
        for watcher in woken { watcher.continuation.resume(returning: true) }
        return result
    }

    /// The origin stopped: every wait ends, unsatisfied.
    func endWatches() {
        let all = state.withLockedValue { s -> [RequestWatcher] in
            defer { s.watchers.removeAll() }
            return Array(s.watchers.values)
        }
        for watcher in all { watcher.continuation.resume(returning: false) }
    }
}
