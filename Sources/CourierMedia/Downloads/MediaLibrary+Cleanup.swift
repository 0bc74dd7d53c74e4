import Courier
import Foundation

/// What a sweep of the library reclaimed (``MediaLibrary/clean(abandonedAfter:)``).
public struct MediaCleanReport: Sendable, Equatable, Codable {
    /// Bytes freed: orphaned files, and the partial files of the versions given up.
    public var reclaimedBytes: Int64 = 0
    /// The orphaned files deleted, relative to the library's root: partial and incoming
    /// files no job or record owns, and temporary files a kill left behind.
    public var removedFiles: [String] = []
    /// Paused or failed versions left longer than the age the app set, cancelled.
    public var abandonedVersions: [MediaVersion] = []
    /// Engine records of the library with no version left (a kill inside a cancel), removed.
    public var orphanedRecords: [String] = []

    /// Makes an empty report.
    public init() {}
}

/// The sweep of what interrupted downloads leave behind (seed 003: "automatic cleanup of
/// incomplete downloads"). Nothing a version in flight owns is touched: a media file's job
/// is saved before its record and its partial, and an image's or subtitle's record before
/// its partial, so a file listed here with no owner read after the listing has none.
extension MediaLibrary {
    /// A temporary file of an atomic write (`.<name>.<random>.tmp`) younger than this may
    /// still be being written by another process; older ones are a kill's leftovers.
    static let temporaryFileGrace: TimeInterval = 600

    /// Sets how long a paused or failed version may stay before the sweep cancels it and
    /// frees its bytes (`nil`, the default: kept until the app says).
    public func setAbandonedAfter(_ age: Duration?) { abandonedAfter = age }

    /// Sweeps the library: deletes partial (`.partial`) and incoming (`.incoming`) files
    /// that no version in flight and no engine record owns, and temporary files a kill
    /// left; removes the library's engine records that no version owns; and cancels paused
    /// or failed versions untouched for `abandonedAfter` (else the library's setting;
    /// `nil`: none). Runs at launch in ``resumeAll(includePaused:includeFailed:)``;
    /// ``lastCleanup`` keeps what the last sweep reclaimed.
    @discardableResult
    public func clean(abandonedAfter age: Duration? = nil) async throws -> MediaCleanReport {
        try checkOpen()
        var report = MediaCleanReport()
        let downloads = root.appendingPathComponent(MediaLayout.downloads)
        // Files first, owners after: an owner is always made before its file.
        let candidates = Self.leftoverCandidates(in: downloads)
        let engineRoot = downloader.configuration.rootDirectory
        let mediaRecords = try await downloader.database.allRecords().filter { $0.id.hasPrefix("media:") }
        let inFlight = jobs.all()

        // Paused or failed versions left too long: cancelled like any (their bytes go).
        if let age = age ?? abandonedAfter {
            let cutoff = Date().addingTimeInterval(-age.timeInterval)
            for job in inFlight {
                guard let listed = mediaRecords.first(where: { $0.id == job.taskId }), [.paused, .failed].contains(listed.state), listed.updatedAt < cutoff,
                      // Read again just before: resumed meanwhile (here or elsewhere), it stays.
                      let record = try await downloader.record(id: job.taskId), [.paused, .failed].contains(record.state), record.updatedAt < cutoff else { continue }
                let bytes = [job.plannedPath + ".partial", job.plannedPath].reduce(Int64(0)) { $0 + PartialFile.length(at: root.appendingPathComponent($1)) }
                do {
                    try await cancel(job.version)
                    report.abandonedVersions.append(job.version)
                    report.reclaimedBytes += bytes
                } catch let error as CourierError where error.code == .notFound {}   // it ended meanwhile
            }
        }
        // The library's records that no version owns (a kill between a cancel's two steps):
        // not completed ones (a finished file is the library's), not one running.
        let jobIds = Set(jobs.all().map(\.taskId))
        for listed in mediaRecords where !jobIds.contains(listed.id) && [.queued, .paused, .failed].contains(listed.state) {
            // Read again just before: a version started meanwhile has its job again.
            guard jobs.load(listed.id) == nil, let record = try await downloader.record(id: listed.id), [.queued, .paused, .failed].contains(record.state) else { continue }
            let bytes = PartialFile.length(at: engineRoot.appendingPathComponent(record.partialPath))
            do {
                try await downloader.cancel(id: record.id)
                report.orphanedRecords.append(record.id)
                report.reclaimedBytes += bytes
            } catch let error as CourierError where error.code == .notFound {}   // gone meanwhile
        }

        // Orphaned files: owned by no job (its planned file and partial) and no record. The
        // owners are read under the library's lock, with no suspension between that read
        // and the deletions (no start of this library slips in; another process's start
        // would have to save its job and record within those microseconds).
        let database = downloader.database
        try await changingMetadata {
            var owned = Set<String>()
            for job in jobs.all() {
                for path in [job.plannedPath, job.plannedPath + ".partial"] { owned.insert(root.appendingPathComponent(path).standardizedFileURL.path) }
            }
            let records = try database.writer.read { db in try DownloadRecord.fetchAll(db) }
            for record in records {
                for path in [record.partialPath, record.localFinalPath] { owned.insert(engineRoot.appendingPathComponent(path).standardizedFileURL.path) }
            }
            for file in candidates where !owned.contains(file.url.standardizedFileURL.path) {
                // The very file listed (a new one of the same name may have replaced it).
                guard let listed = file.identity, let now = PartialFile.identity(at: file.url), now == listed else { continue }
                try removeFile(file.url)
                report.removedFiles.append(try relativePath(file.url))
                report.reclaimedBytes += file.size
            }
            MediaDiscovery.removeEmptyFolders(downloads)
        }
        if !report.removedFiles.isEmpty || !report.abandonedVersions.isEmpty || !report.orphanedRecords.isEmpty {
            logger.info("cleanup: \(report.reclaimedBytes) bytes reclaimed (\(report.removedFiles.count) files, \(report.abandonedVersions.count) abandoned versions, \(report.orphanedRecords.count) records)")
        }
        lastCleanup = report
        return report
    }

    /// A file the sweep may delete, as it was when listed.
    struct Leftover { let url: URL; let identity: (device: UInt64, inode: UInt64)?; let size: Int64 }

    /// Partial, incoming and old temporary files under `downloads`.
    static func leftoverCandidates(in downloads: URL) -> [Leftover] {
        guard let walker = FileManager.default.enumerator(at: downloads, includingPropertiesForKeys: [.isRegularFileKey, .contentModificationDateKey]) else { return [] }
        var out: [Leftover] = []
        let now = Date()
        for case let url as URL in walker {
            let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .contentModificationDateKey])   // a file that cannot be inspected is left alone
            guard values?.isRegularFile == true else { continue }
            let name = url.lastPathComponent
            let leftover = name.hasSuffix(".partial") || name.hasSuffix(MediaLayout.incomingSuffix)
                || name.hasPrefix(".") && name.hasSuffix(".tmp") && now.timeIntervalSince(values?.contentModificationDate ?? now) > temporaryFileGrace
            if leftover { out.append(Leftover(url: url, identity: PartialFile.identity(at: url), size: PartialFile.length(at: url))) }
        }
        return out
    }
}
