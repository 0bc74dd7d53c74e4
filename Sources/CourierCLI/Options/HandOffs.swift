import Courier
import CourierAttachments
import Foundation

/// The CLI's side of background hand-off (`BackgroundTransfers`), so an app's hand-off can
/// be replayed from the shell (`get --hand-off-at`) and a store left with hand-offs (by a
/// killed process, or an app's database) goes on: a URLSession download task of the
/// default configuration stands in for the background session, which only Apple has.
enum HandOffs {
    /// Where a store's hand-offs keep their files: beside the database.
    static func folder(_ store: StoreOptions) -> URL {
        URL(fileURLWithPath: store.databasePath).deletingLastPathComponent().appendingPathComponent("handoff")
    }

    /// The hand-off session of a store: its kept files live beside the database.
    static func transfers(_ downloader: Downloader, store: StoreOptions) throws -> any HandOffSession {
        try URLSessionBuild.required().handOffSession(downloader, stashDirectory: folder(store), logger: makeLogger(verbose: false))
    }

    /// Ends the upload hand-offs a stopped `put --hand-off-at` left (their tasks died with
    /// it): each piece goes back to its upload, whose run then asks the server what it holds.
    static func recoverUploads(_ database: CourierDatabase, store: StoreOptions) async throws {
        guard try await !database.uploadHandOffPieces().isEmpty else { return }
        let transfers = try uploadSession(database: database, store: store)   // courier becomes courier-urlsession here
        try await transfers.recoverUploads()
        transfers.invalidate()
    }

    /// A hand-off session for uploads (`put`): its downloader only hosts the session on the
    /// store's database; it downloads nothing.
    static func uploadSession(database: CourierDatabase, store: StoreOptions) throws -> any HandOffSession {
        let support = try URLSessionBuild.required()
        let host = Downloader(configuration: DownloaderConfiguration(rootDirectory: URL(fileURLWithPath: "/")), database: database, transport: support.transport())
        return support.handOffSession(host, stashDirectory: folder(store), logger: makeLogger(verbose: false))
    }

    /// `put --hand-off-at`: `run` uploads here until the server confirmed `threshold`
    /// bytes; it is then stopped and `handOff` turns what is left into upload tasks, as an
    /// app going to the background would. Once every task ended (each piece recorded as the
    /// server confirmed it, or given back), `run` goes on: it asks the server what it holds,
    /// sends only the rest, and completes. `holdsArrival` (a hidden test flag): the tasks'
    /// ends are not recorded, and once they all ended the command waits to be killed.
    static func upload(_ label: String, after threshold: Int64, holdsArrival: Bool, journal: UploadJournal, _ transfers: any HandOffSession,
                       folder: URL, run: @escaping @Sendable () async throws -> String,
                       handOff: @escaping @Sendable (URL, UploadJournal) async throws -> [UploadTaskRequest]) async throws -> String {
        transfers.actsOnEvents = !holdsArrival
        let work = Task { try await run() }
        let fired = Locked<Int64?>(nil)
        let watch = Task {
            while !Task.isCancelled {
                let confirmed = (try? await journal.database.upload(id: journal.id))??.record.confirmedBytes ?? 0   // unreadable: looked at again
                if confirmed >= threshold {
                    fired.withLock { $0 = confirmed }
                    work.cancel()
                    return
                }
                try? await Task.sleep(for: .milliseconds(20))   // cancelled once the upload ended: the loop ends
            }
        }
        let first = await work.result
        watch.cancel()
        guard let at = fired.withLock({ $0 }) else { return try first.get() }
        switch first {
        case .success(let location): return location   // it ended as it was stopped
        case .failure(let error) where !(error is CancellationError) && (error as? CourierError)?.code != .cancelled:
            throw error   // it failed on its own, not because it was stopped
        case .failure: break
        }
        var owned = journal
        owned.owner = transfers.downloader.leaseOwner   // a second `put` on the store leaves these pieces alone
        let requests = try await handOff(folder, owned)
        let made = await transfers.handOffUploads(requests)
        Terminal.error("Handed \(made) piece(s) of \(label) off to URLSession upload tasks at \(Format.bytes(at)).")
        if holdsArrival {
            while transfers.uploadTasksInFlight > 0 { try await Task.sleep(for: .milliseconds(20)) }
            Terminal.error("Every upload task ended; holding (test).")
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        // Until every piece's hand-off ended. A piece whose end could not be recorded when its
        // task ended is ended by recovery once the tasks have been gone for two seconds.
        var idleSince: ContinuousClock.Instant?
        while try await !journal.database.uploadHandOffPieces(uploadId: journal.id).isEmpty {
            if transfers.uploadTasksInFlight > 0 {
                idleSince = nil
            } else if let since = idleSince, ContinuousClock.now - since > .seconds(2) {
                try await transfers.recoverUploads()
                idleSince = nil
            } else if idleSince == nil {
                idleSince = .now
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await run()
    }

    /// Ends every hand-off a stopped process left: what arrived is adopted (and finished),
    /// the rest goes back to the engine. Before anything is enqueued or resumed. Returns the
    /// ids it took up: `get` does not revalidate a file it has just finished from them.
    @discardableResult
    static func recover(_ downloader: Downloader, store: StoreOptions) async throws -> Set<String> {
        let ids = try await downloader.handedOffIDs()
        guard !ids.isEmpty else { return [] }
        let transfers = try transfers(downloader, store: store)   // courier becomes courier-urlsession here
        _ = try await transfers.recover()
        transfers.invalidate()   // no task of this process: nothing to wait for
        return Set(ids)
    }

    /// Hands every unfinished download of `ids` off (the running ones and those queued
    /// behind them) once one of them holds `threshold` bytes, as an app going to the
    /// background would: one moment for all. (Partial files are watched, not the progress
    /// events: those are paced, and a reply that stalls may leave the last one far behind
    /// the file.) `holdsArrival` (a hidden test flag): a task's file is kept, then nothing
    /// more happens, so a test can SIGKILL the process in that window.
    static func handOff(_ ids: [String], after threshold: Int64, holdsArrival: Bool, _ transfers: any HandOffSession) -> Task<Void, Never> {
        transfers.actsOnEvents = !holdsArrival
        let downloader = transfers.downloader
        let watched = Set(ids)
        return Task {
            while !Task.isCancelled {
                for id in await downloader.runningIDs.intersection(watched).sorted() {
                    // Unreadable for now: looked at again.
                    guard let record = try? await downloader.record(id: id), record.state == .downloading else { continue }
                    let partial = downloader.configuration.rootDirectory.appendingPathComponent(record.partialPath)
                    let kept = (try? await downloader.database.keptBytes(id: id, partial: partial)) ?? 0   // unknown: not yet
                    guard kept >= threshold else { continue }
                    let handed = await transfers.handOffAll(among: watched)
                    if !handed.isEmpty {
                        Terminal.error("Handed \(handed.count == 1 ? handed[0] : "\(handed.count) downloads") off to URLSession download tasks at \(Format.bytes(kept)) of \(id).")
                    }
                    return
                }
                if await downloader.isIdle { return }
                try? await Task.sleep(for: .milliseconds(50))   // cancelled with the command: the loop ends
            }
        }
    }
}
