import Courier
import Foundation

/// The CLI's side of background hand-off (`BackgroundTransfers`), so an app's hand-off can
/// be replayed from the shell (`get --hand-off-at`) and a store left with hand-offs (by a
/// killed process, or an app's database) goes on: a URLSession download task of the
/// default configuration stands in for the background session, which only Apple has.
enum HandOffs {
    /// The hand-off session of a store: its kept files live beside the database.
    static func transfers(_ downloader: Downloader, store: StoreOptions) throws -> any HandOffSession {
        let folder = URL(fileURLWithPath: store.databasePath).deletingLastPathComponent().appendingPathComponent("handoff")
        return try URLSessionBuild.required().handOffSession(downloader, stashDirectory: folder, logger: makeLogger(verbose: false))
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
