import Foundation

/// Renews the leases of a downloader's runs: one task ticks for all of them, every third of
/// the lease's duration and only while one runs, and renews every lease in one transaction
/// (a heartbeat task, timer and task group per run cost a 64 KiB file about 6 % of its
/// CPU; BENCHMARKS.md). A lease it cannot renew (the record left `downloading`, or another
/// live owner took it over) stops its run; so does a renewal that fails (the database).
final class LeaseKeeper: Sendable {
    /// One run's lease, kept from its claim to its end.
    final class Slot: Sendable {
        let id: String
        let run: RunHandle
        fileprivate init(id: String, run: RunHandle) {
            self.id = id
            self.run = run
        }
    }

    private struct State {
        var slots: [ObjectIdentifier: Slot] = [:]
        var ticking = false
    }
    private let state = Locked(State())
    private let database: CourierDatabase
    private let owner: LeaseOwner
    private let duration: Duration

    init(database: CourierDatabase, owner: LeaseOwner, duration: Duration) {
        self.database = database
        self.owner = owner
        self.duration = duration
    }

    /// Keeps `id`'s lease, just claimed by `run`, until ``release(_:)``.
    func keep(_ id: String, for run: RunHandle) -> Slot {
        let slot = Slot(id: id, run: run)
        let startTicking = state.withLock { s -> Bool in
            s.slots[ObjectIdentifier(slot)] = slot
            defer { s.ticking = true }
            return !s.ticking
        }
        if startTicking {
            Task { [self] in await tick() }
        }
        return slot
    }

    /// Stops renewing `slot`'s lease (its run ends; its last write clears or requeues it).
    func release(_ slot: Slot) {
        state.withLock { _ = $0.slots.removeValue(forKey: ObjectIdentifier(slot)) }
    }

    private func tick() async {
        while true {
            try? await Task.sleep(for: duration / 3)   // never cancelled: it ends when no run holds a lease
            let slots: [Slot]? = state.withLock { s in
                if s.slots.isEmpty { s.ticking = false; return nil }
                return Array(s.slots.values)
            }
            guard let slots else { return }
            let expiry = Date().addingTimeInterval(duration.timeInterval)
            do {
                let renewed = try await database.renewLeases(ids: Set(slots.map(\.id)), owner: owner, until: expiry)
                for slot in slots where !renewed.contains(slot.id) { slot.run.stop(.leaseLost) }
            } catch {
                let failure = error as? CourierError ?? CourierError(.database, "renewing the leases failed: \(error)", underlying: error)
                for slot in slots { slot.run.stop(.leaseUnrenewable(failure)) }
            }
        }
    }
}

/// A run's task, as its downloader started it, so the lease keeper can stop it.
final class RunHandle: Sendable {
    /// Why the lease keeper stopped the run.
    enum Stop: Sendable {
        /// The record left `downloading`, or another live owner took its lease over.
        case leaseLost
        /// The renewal failed: the run fails with that error.
        case leaseUnrenewable(CourierError)
    }
    private struct State {
        var task: Task<RunOutcome, Never>?
        var stop: Stop?
    }
    private let state = Locked(State())

    /// The run's task; a stop asked before it was known cancels it now.
    func attach(_ task: Task<RunOutcome, Never>) {
        let stopped = state.withLock { s -> Bool in
            s.task = task
            return s.stop != nil
        }
        if stopped { task.cancel() }
    }

    /// Stops the run (its task is cancelled); the first reason stands.
    func stop(_ reason: Stop) {
        let task = state.withLock { s -> Task<RunOutcome, Never>? in
            guard s.stop == nil else { return nil }
            s.stop = reason
            return s.task
        }
        task?.cancel()
    }

    /// Why the lease keeper stopped the run, if it did.
    var stopReason: Stop? { state.withLock { $0.stop } }
}
