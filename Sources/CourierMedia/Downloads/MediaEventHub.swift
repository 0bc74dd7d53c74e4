import Courier
import Foundation

/// The library's own events (finishing, and the ends the library decides: completed, a
/// failed validation, cancelled), to every subscriber of a version. A final event stays as
/// the version's tombstone, so a subscriber that comes late still gets it, until the
/// version is started again (or a later end replaces it).
final class MediaEventHub: Sendable {
    private struct State {
        var subscribers: [MediaVersion: [UUID: AsyncStream<MediaDownloadEvent>.Continuation]] = [:]
        var tombstones: [MediaVersion: MediaDownloadEvent] = [:]
        var settling: Set<MediaVersion> = []
    }
    private let state = Locked(State())

    /// Adds `continuation` as a subscriber of `version` under `key`, or returns the
    /// version's final event when it already ended (the continuation is then not kept).
    func subscribe(_ version: MediaVersion, key: UUID, _ continuation: AsyncStream<MediaDownloadEvent>.Continuation) -> MediaDownloadEvent? {
        state.withLock { s in
            if let t = s.tombstones[version] { return t }
            s.subscribers[version, default: [:]][key] = continuation
            return nil
        }
    }

    /// Removes a subscriber (its stream ended).
    func unsubscribe(_ version: MediaVersion, key: UUID) {
        state.withLock { _ = $0.subscribers[version]?.removeValue(forKey: key) }
    }

    /// Sends `event` to the version's subscribers; a final event ends their streams and stays.
    func publish(_ version: MediaVersion, _ event: MediaDownloadEvent) {
        let targets: [AsyncStream<MediaDownloadEvent>.Continuation] = state.withLock { s in
            let list = Array((s.subscribers[version] ?? [:]).values)
            if event.isFinal {
                s.settling.remove(version)
                s.tombstones[version] = event
                s.subscribers[version] = nil
            }
            return list
        }
        for c in targets {
            c.yield(event)
            if event.isFinal { c.finish() }
        }
    }

    /// Marks a version whose end the library is about to publish, once it has tidied up
    /// (forgotten the engine's record, whose own `cancelled` then means nothing).
    func settle(_ version: MediaVersion) {
        state.withLock { _ = $0.settling.insert(version) }
    }

    /// Whether the library is about to publish the version's end.
    func isSettling(_ version: MediaVersion) -> Bool {
        state.withLock { $0.settling.contains(version) }
    }

    /// The end told when the library shut down before a version ended (it resumes at the
    /// next launch).
    static func shutDown(_ version: MediaVersion) -> CourierError {
        CourierError(.cancelled, "the library shut down; \(version) resumes at the next launch")
    }

    /// Ends every subscriber's stream with ``shutDown(_:)`` (no tombstone: the versions
    /// go on at the next launch).
    func shutdown() {
        let all: [(MediaVersion, AsyncStream<MediaDownloadEvent>.Continuation)] = state.withLock { s in
            defer { s.subscribers = [:] }
            return s.subscribers.flatMap { version, list in list.values.map { (version, $0) } }
        }
        for (version, c) in all {
            c.yield(.paused(Self.shutDown(version)))
            c.finish()
        }
    }

    /// Forgets the version's end: it is starting again.
    func reopen(_ version: MediaVersion) {
        state.withLock {
            $0.tombstones.removeValue(forKey: version)
            $0.settling.remove(version)
        }
    }

    /// The version's final event, when it ended in this process.
    func tombstone(_ version: MediaVersion) -> MediaDownloadEvent? {
        state.withLock { $0.tombstones[version] }
    }
}
