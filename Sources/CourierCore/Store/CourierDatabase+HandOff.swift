import Foundation
import GRDB

/// The store's side of a background hand-off: each change is one transaction that moves
/// the record and its ``HandOffRecord`` together, so a relaunch finds either both or
/// neither. Files are never touched here (the callers act on them after the commit).
extension CourierDatabase {
    /// Hands download `id` off keeping the bytes its partial file holds: `fileLength`, or,
    /// for a segmented download, the bytes from 0 up to the first gap (a download task
    /// fetches one remainder; its ranges are forgotten). Only from `queued` or
    /// `downloading`, and not under another live lease. Returns the hand-off, or `nil`.
    func handOff(id: String, fileLength: Int64, owner: LeaseOwner) async throws -> HandOffRecord? {
        try await write { db in
            guard var record = try DownloadRecord.fetch(db, id: id), [.queued, .downloading].contains(record.state),
                  !owner.isBlocked(by: record) else { return nil }
            let segments = try Segment.filter(Segment.Columns.downloadId == id).order(Column("start")).fetchAll(db)
            var kept = fileLength
            if !segments.isEmpty {
                kept = 0
                for segment in segments {
                    guard segment.start == kept else { break }
                    kept = segment.next
                    guard segment.isComplete else { break }
                }
                kept = min(kept, fileLength)
                try Segment.filter(Segment.Columns.downloadId == id).deleteAll(db)
            }
            let handOff = HandOffRecord(record: record, kept: kept, owner: owner)
            let stored = record
            record.handOff(keeping: kept)
            record.updatedAt = Date()
            try record.updateRow(db, from: stored)
            try handOff.insert(db, onConflict: .replace)
            return handOff
        }
    }

    /// The downloads `owner` may hand off (queued, or downloading under no other live
    /// lease), in the order the engine would run them: priority, then age, then id.
    func handOffCandidates(owner: LeaseOwner) async throws -> [String] {
        try await read { db in
            try DownloadRecord
                .filter([DownloadState.queued.rawValue, DownloadState.downloading.rawValue].contains(DownloadRecord.Columns.state))
                .order(DownloadRecord.Columns.priority.desc, DownloadRecord.Columns.createdAt, DownloadRecord.Columns.id)
                .fetchAll(db)
                .filter { !owner.isBlocked(by: $0) }
                .map(\.id)
        }
    }

    /// Notes `bytes` (the kept bytes and what the system's task wrote since) as the
    /// progress of handed-off download `id`; nothing when it is no longer handed off.
    func noteHandOffProgress(id: String, bytes: Int64) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE \(DownloadRecord.databaseTableName) SET bytesReceived = ?, updatedAt = ? WHERE id = ? AND state = ?",
                           arguments: [bytes, DatabaseDate.text(Date()), id, DownloadState.handedOff.rawValue])
        }
    }

    /// The hand-off of download `id` while it is handed off, with its record.
    public func handOff(id: String) async throws -> (record: DownloadRecord, handOff: HandOffRecord)? {
        try await read { db in
            guard let record = try DownloadRecord.fetch(db, id: id), record.state == .handedOff,
                  let handOff = try HandOffRecord.fetchOne(db, key: id) else { return nil }
            return (record, handOff)
        }
    }

    /// Every handed-off download: its id and the owner that handed it off.
    public func handedOff() async throws -> [(id: String, owner: String?)] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT d.id, h.owner FROM \(DownloadRecord.databaseTableName) d
                LEFT JOIN \(HandOffRecord.databaseTableName) h ON h.downloadId = d.id
                WHERE d.state = ? ORDER BY d.createdAt
                """, arguments: [DownloadState.handedOff.rawValue]).map { (id: $0["id"], owner: $0["owner"]) }
        }
    }

    /// Ends download `id`'s hand-off with `change` (the record leaves `handedOff`) and
    /// deletes its row, in one transaction; `nil` when it is no longer handed off.
    func endHandOff(id: String, _ change: @Sendable @escaping (inout DownloadRecord) -> Void) async throws -> DownloadRecord? {
        try await write { db in
            guard var record = try DownloadRecord.fetch(db, id: id), record.state == .handedOff else { return nil }
            let stored = record
            change(&record)
            record.updatedAt = Date()
            try record.updateRow(db, from: stored)
            _ = try HandOffRecord.deleteOne(db, key: id)
            return record
        }
    }
}
