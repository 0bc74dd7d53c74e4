import Foundation
import GRDB

/// Code of the app's that runs inside the database write that marks a download completed:
/// `db` is that write's connection, `record` the completed record (``DownloadRecord/localFinalPath``
/// is where the file is). What the hook writes commits with the record or not at all; a hook
/// that throws rolls the whole write back, and the download fails with
/// ``CourierError/Code/completionHook``. It runs on the database's writer: keep it to a few
/// statements (no network, no waiting on the main actor).
public typealias CompletionHook = @Sendable (_ db: Database, _ record: DownloadRecord) throws -> Void

/// The completion hooks a downloader knows, by id prefix, longest first.
final class CompletionHooks: Sendable {
    private struct Entry { let prefix: String; let hook: CompletionHook }
    private let entries = Locked<[Entry]>([])

    func add(prefix: String, _ hook: @escaping CompletionHook) throws {
        try entries.withLock { all in
            guard !all.contains(where: { $0.prefix == prefix }) else {
                throw CourierError(.invalidArgument, "downloads with ids \(prefix)… have a completion hook already")
            }
            all.append(Entry(prefix: prefix, hook: hook))
            all.sort { $0.prefix.count > $1.prefix.count }
        }
    }

    /// The hook of the longest prefix that starts `id`, if any.
    func hook(for id: String) -> CompletionHook? {
        entries.withLock { all in all.first { id.hasPrefix($0.prefix) }?.hook }
    }
}

extension Downloader {
    /// Runs `hook` inside the write that marks each download whose id starts with `prefix`
    /// completed (`""`: every download), so the app's own row (a media row's `localPath`)
    /// changes with Courier's record or not at all, across a kill at any point: share the
    /// app's GRDB database with Courier (``CourierDatabase/init(writer:)``) and write the row
    /// through `db`. For those downloads the final file is also moved into place inside that
    /// write, as its last step: when the write commits, the record is completed, the app's
    /// row is written and the file is whole at its path; when it does not (a kill, a hook
    /// that throws), none of the three happened and the download finishes at its next run
    /// (a kill) or fails with ``CourierError/Code/completionHook`` keeping its whole partial
    /// (a throw; resuming runs the hook again, with no byte fetched).
    ///
    /// Register the hooks at every launch, before ``start()``: a download completed by a
    /// relaunched process runs the hook that process registered. The longest matching prefix
    /// wins; a prefix given twice is refused (`E_INVALID_ARGUMENT`).
    public nonisolated func onCompletion(ofIDsWithPrefix prefix: String, _ hook: @escaping CompletionHook) throws {
        try context.completionHooks.add(prefix: prefix, hook)
    }
}

extension CourierDatabase {
    /// Marks download `id` completed while it is still `downloading` under `lease`, running
    /// `hook` and then `lastStep` (the final file's rename) inside the same write: all of it
    /// commits or none of it. `nil` when the record left `downloading` or another lease holds
    /// it; a hook's error leaves as ``CourierError/Code/completionHook``; `stopped`, read as
    /// the write begins, true: `CancellationError` and nothing happens.
    func complete(id: String, lease: LeaseOwner, _ change: @Sendable @escaping (inout DownloadRecord) -> Void,
                  hook: @escaping CompletionHook, unless stopped: @escaping @Sendable () -> Bool = { false },
                  lastStep: (@Sendable () throws -> Void)?) async throws -> DownloadRecord? {
        try await write { db in
            guard var record = try DownloadRecord.fetch(db, id: id), record.state == .downloading, !lease.isBlocked(by: record) else { return nil }
            // The caller was stopped before this write began: nothing of it happens.
            if stopped() { throw CancellationError() }
            let stored = record
            change(&record)
            record.updatedAt = Date()
            try record.updateRow(db, from: stored)
            do { try hook(db, record) } catch {
                let why = (error as? CourierError)?.description ?? String(describing: error)
                throw CourierError(.completionHook, "the app's completion hook threw, so download \(id) was not completed (its bytes are kept; resuming runs the hook again): \(why)",
                                   underlying: error)
            }
            try lastStep?()
            return record
        }
    }
}
