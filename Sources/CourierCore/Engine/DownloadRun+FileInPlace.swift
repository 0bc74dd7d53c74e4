import Foundation

extension DownloadRun {
    /// What a run does, right after its claim, with a file already at its destination while
    /// its record is not completed: the completed record when that file is the download's,
    /// whole, as its record describes it (nothing is asked); nil when the run goes on and asks.
    /// A file it cannot vouch for is left where it is: a completion replaces it, and a
    /// download that fails leaves it (it may be the version the user had; RELIABILITY.md,
    /// "A failed download beside a file a killed process put in place").
    func completeFileInPlace(_ record: DownloadRecord, partialURL: URL, finalURL: URL) async throws -> DownloadRecord? {
        // Killed between the rename and the record update: the final file is whole. (Not
        // while revalidating without a checksum: the file in place may still be the old
        // version, of the same size; asking again is the safe way to tell.) Nor for a small
        // body without a checksum: its validators are written only with its completion, so
        // the size and ETag recorded may be another reply's (a later run stopped before its
        // body) than the file's, and completing would name the wrong version; it is asked
        // again, at most 1 MiB (the simulator, once processes could be killed).
        if let total = record.totalBytes, total > 0, PartialFile.length(at: partialURL) == 0,
           Self.vouchesForFileInPlace(record),
           PartialFile.length(at: finalURL) == total,
           try record.expectedSHA256 == nil || Self.sha256(of: finalURL, length: total) == record.expectedSHA256 {
            try await discardPartial(partialURL)   // an empty one, named by a stop before its body
            // Its rename's folder sync may have failed (the download then failed with the
            // error, the file left over the one it replaced): synced now, before the record
            // says done, or a power cut could leave a completed record over the older file.
            let folder = finalURL.deletingLastPathComponent()
            try await Blocking.run { try Durability.syncFolder(folder) }
            if let done = try await markCompleted(length: total) { return done }
            throw ExternalStop()
        }
        return nil
    }

    /// Whether a run finds a whole file of `record`'s size in place complete without a
    /// request: one a checksum proves, or a big body's (its validators are written before its
    /// bytes) when no older version is being revalidated; anything else is asked for again
    /// (above).
    static func vouchesForFileInPlace(_ record: DownloadRecord) -> Bool {
        record.expectedSHA256 != nil || (record.heldBytes == nil && (record.totalBytes ?? 0) > smallBody)
    }
}
