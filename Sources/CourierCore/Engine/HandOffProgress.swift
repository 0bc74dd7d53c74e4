import Foundation

/// The system's progress on one handed-off download: what its task wrote, turned into the
/// engine's own `.progress` events (through the downloader's progress ticker, so as often
/// as a running download's) and into the stored record's `bytesReceived` (at most once per
/// ``DownloaderConfiguration/progressPersistInterval``), so a relaunched app and
/// `courier status` show where the transfer is while the app is away.
///
/// The delegate of the system's session calls ``note(written:expected:)`` for each of its
/// progress callbacks; it is cheap and never waits. The stored count is only a display:
/// the bytes the engine goes on from after a take-back are the hand-off's kept bytes
/// (``HandOffRecord/keptBytes``), never this count.
public final class HandOffProgress: Sendable {
    /// The download's id.
    public let id: String
    /// The bytes the partial file kept when the download was handed off.
    public let keptBytes: Int64
    private let ticker: ProgressTicker
    private let database: CourierDatabase
    private let persistInterval: Duration
    private let clock: any EngineClock
    private struct State {
        var slot: ProgressTicker.Slot?
        var written: Int64 = 0
        var expected: Int64?
        var lastPersisted: ContinuousClock.Instant?
        var persisting = false
        var closed = false
    }
    private let state = Locked(State())
    private let knownTotal: Int64?

    init(id: String, keptBytes: Int64, totalBytes: Int64?, context: EngineContext) {
        self.id = id
        self.keptBytes = keptBytes
        self.knownTotal = totalBytes
        ticker = context.ticker
        database = context.database
        persistInterval = context.configuration.progressPersistInterval
        clock = context.configuration.clock
    }

    /// The system's task has written `written` bytes of the rest (of `expected`, when the
    /// reply said how many).
    public func note(written: Int64, expected: Int64?) {
        let now = clock.now
        let persist = state.withLock { s -> Int64? in
            guard !s.closed, written >= s.written else { return nil }
            s.written = written
            if let expected, expected > 0 { s.expected = expected }
            if s.slot == nil {
                s.slot = ticker.start(id: id, offset: keptBytes, total: knownTotal ?? s.expected.map { keptBytes + $0 })
            }
            s.slot?.note(keptBytes + written)
            guard !s.persisting, s.lastPersisted.map({ now - $0 >= persistInterval }) ?? true else { return nil }
            s.persisting = true
            s.lastPersisted = now
            return keptBytes + written
        }
        guard let persist else { return }
        EngineExecutor.current.task { [database, id, state] in
            // A display only: a failed write is simply replaced by the next one.
            try? await database.noteHandOffProgress(id: id, bytes: persist)
            state.withLock { $0.persisting = false }
        }
    }

    /// What the system's task has written so far, and of how many.
    public var written: (bytes: Int64, expected: Int64?) { state.withLock { ($0.written, $0.expected) } }

    /// The hand-off ended: the last bytes noted are published, then nothing more is
    /// published or stored.
    func close() {
        let slot = state.withLock { s -> ProgressTicker.Slot? in
            s.closed = true
            defer { s.slot = nil }
            return s.slot
        }
        if let slot { ticker.stop(slot, publishing: true) }
    }
}

extension Downloader {
    /// The progress sink of handed-off download `id`, made on first use (after a relaunch,
    /// from the stored hand-off); `nil` when it is not handed off.
    public func handOffProgress(id: String) async throws -> HandOffProgress? {
        if let progress = handOffProgress[id] { return progress }
        guard let (record, handOff) = try await context.database.handOff(id: id) else { return nil }
        if let progress = handOffProgress[id] { return progress }   // made while the store was read
        let progress = HandOffProgress(id: id, keptBytes: handOff.keptBytes, totalBytes: handOff.totalBytes ?? record.expectedBytes, context: context)
        handOffProgress[id] = progress
        return progress
    }

    /// Stops following the system's progress of `id` (its hand-off ended).
    func closeHandOffProgress(_ id: String) {
        handOffProgress.removeValue(forKey: id)?.close()
    }
}
