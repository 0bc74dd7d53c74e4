import Foundation

extension DownloadRun {
    /// What a run does, right after its claim, with a file already at its destination while
    /// its record is not completed. Returns the completed record when that file is the
    /// download's, whole (nothing is asked); nil when the run goes on and asks.
    ///
    /// `afterCutRun`: the claim took over a run that never ended (``DownloadRecord/runWasCut``).
    func settleFileInPlace(_ record: DownloadRecord, afterCutRun: Bool, partialURL: URL, finalURL: URL) async throws -> DownloadRecord? {
        // Killed between the rename and the record update: the final file is whole. (Not
        // while revalidating without a checksum: the file in place may still be the old
        // version, of the same size; asking again is the safe way to tell.) Nor for a small
        // body without a checksum: its validators are written only with its completion, so
        // the size and ETag recorded may be another reply's (a later run stopped before its
        // body) than the file's, and completing would name the wrong version; it is asked
        // again, at most 1 MiB (the simulator, once processes could be killed).
        if let total = record.totalBytes, total > 0, PartialFile.length(at: partialURL) == 0,
           record.heldBytes == nil || record.expectedSHA256 != nil,
           total > Self.smallBody || record.expectedSHA256 != nil,
           PartialFile.length(at: finalURL) == total,
           try record.expectedSHA256 == nil || Self.sha256(of: finalURL, length: total) == record.expectedSHA256 {
            try discardPartial(partialURL)   // an empty one, named by a stop before its body
            if let done = try await markCompleted(length: total) { return done }
            throw ExternalStop()
        }
        // A file the record cannot vouch for, written since the download was enqueued, found
        // by a run that took over one that never ended: that run's completion, cut by a kill
        // before its record said so. It goes before this run asks again, so that a download
        // that then fails leaves nothing in place: the database and the files agree (the
        // simulator, seed 157288212). A file that was there before the download (older than
        // its record), or the old version a revalidation keeps, stays until a completion
        // replaces it.
        if afterCutRun, record.heldBytes == nil, Self.written(finalURL, since: record.createdAt) {
            guard unlink(finalURL.path) == 0 || errno == ENOENT else {
                throw CourierError(.writeFailed, "could not remove \(finalURL.lastPathComponent), left in place by a run that was killed: \(String(cString: strerror(errno)))")
            }
        }
        return nil
    }

    /// Whether a file is at `url` whose last write is not older than `date` (a second's
    /// slack: the record's dates are stored to the millisecond).
    static func written(_ url: URL, since date: Date) -> Bool {
        // No file, or none that can be read: nothing to take away.
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date else { return false }
        return modified >= date.addingTimeInterval(-1)
    }
}
