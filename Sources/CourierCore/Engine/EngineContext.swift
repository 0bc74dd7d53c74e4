import Foundation
import Logging

/// What the downloader and its runs share.
struct EngineContext: Sendable {
    let configuration: DownloaderConfiguration
    let database: CourierDatabase
    let transport: any HTTPTransport
    /// The downloader's own URL refresher and request authorizer (for ids no route claims).
    let refresher: (any URLRefreshing)?
    let authorizer: (any RequestAuthorizing)?
    /// Credentials routed by id prefix: each feature sharing the downloader (attachments,
    /// media, documents) answers for its own downloads.
    let routes = CredentialRoutes()
    /// The app's code that runs inside the write completing a download (``Downloader/onCompletion(ofIDsWithPrefix:_:)``).
    let completionHooks = CompletionHooks()
    let logger: Logger
    let hub: EventHub
    /// Publishes single-stream progress, trailing edge included (one task for all runs).
    let ticker: ProgressTicker
    /// This downloader's lease owner id.
    let owner: LeaseOwner

    /// The URL refresher for download `id`: its route's, else (not a feature's id) the
    /// downloader's own.
    func refresher(for id: String) -> (any URLRefreshing)? {
        if let route = routes.route(for: id) { return route.refresher }
        return CredentialRoutes.isReserved(id) ? nil : refresher
    }

    /// The request authorizer for download `id`: its route's, else (not a feature's id) the
    /// downloader's own.
    func authorizer(for id: String) -> (any RequestAuthorizing)? {
        if let route = routes.route(for: id) { return route.authorizer }
        return CredentialRoutes.isReserved(id) ? nil : authorizer
    }

    /// The lease's expiry if renewed now.
    func leaseExpiry() -> Date {
        owner.wallClock().addingTimeInterval(configuration.leaseDuration.timeInterval)
    }

    /// Runs a write whose failure nobody can act on (the run has already ended, or is
    /// ending with another error that wins): a failure is logged as a warning, with what
    /// was being done, and dropped. The record then says what the last successful write
    /// said, and the partial file keeps every byte (its length wins at the next start).
    @discardableResult
    func bestEffort<T: Sendable>(_ what: String, id: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async -> T? {
        do { return try await body() } catch {
            logger.warning("\(what) failed: \(error)", metadata: ["id": "\(id)"])
            return nil
        }
    }

    /// Deletes a partial, when there is one, for good: its folder is synced before anything
    /// the caller does next (a cancel's record deletion), so a power cut cannot bring it
    /// back beside no record (the simulator's power cut: seed 40000614). A cancel that
    /// finds no name syncs nothing: every other deletion of a partial is made durable where
    /// it happens (`PartialFile.deleteDurably`; seed 40001793). One fsync when a partial
    /// was deleted; a failed sync only logged.
    func deletePartial(_ url: URL, id: String, isolation: isolated (any Actor)? = #isolation) async {
        guard unlink(url.path) == 0 else { return }
        await syncFolder(ofDeleted: url, id: id)
    }

    /// A name just deleted (a partial, or one a run gave and took back) stays gone through
    /// a power cut: its folder is synced. A failure only logged.
    func syncFolder(ofDeleted url: URL, id: String, isolation: isolated (any Actor)? = #isolation) async {
        let folder = url.deletingLastPathComponent()
        await bestEffort("syncing the folder of a deleted name", id: id) { try await Blocking.run { try Durability.syncFolder(folder) } }
    }

    /// The absolute URL of a path relative to the root directory.
    func fileURL(_ relative: String) -> URL {
        // `isDirectory: false`: without it Foundation stats the path to decide (a stat for
        // every call, several per file; these are files).
        configuration.rootDirectory.appendingPathComponent(relative, isDirectory: false)
    }
}

/// How a run ended.
enum RunOutcome: Sendable {
    case completed(DownloadRecord)
    case failed(CourierError)
    /// Paused by the engine itself (no space), with the reason.
    case paused(CourierError)
    /// The run's task was cancelled (pause, cancel, shutdown): the downloader decides.
    /// `unsaved`: validators of the reply whose bytes the partial holds, not yet recorded.
    case interrupted(unsaved: UnsavedReply.Change?)
    /// Another process paused, cancelled or deleted the record.
    case stoppedExternally
    /// Another process (or downloader) holds the record's lease and runs it.
    case leasedElsewhere
}

extension RunOutcome {
    /// Whether the run may still hold the record's lease: completed, failed and paused runs
    /// cleared it in their final write, and a refused lease was never held.
    var releasesLease: Bool {
        switch self {
        case .completed, .failed, .paused, .leasedElsewhere: return false
        case .interrupted, .stoppedExternally: return true
        }
    }
}

/// Thrown inside a run when another owner holds the record's lease.
struct LeasedElsewhere: Error {}

/// Thrown inside a run when the record left the `downloading` state under it.
struct ExternalStop: Error {}
