import Crypto
import Foundation

/// What pressing DOWNLOAD did (seed 002).
public enum DownloadButtonAction: Sendable, Equatable {
    /// Rule 1: the download is complete and its file opens: open this file.
    case open(URL)
    /// Rules 2, 5, 6: a download started, after rule 7's clean-up.
    case downloadStarted(DownloadRecord)
    /// Rule 4: the record says in progress; nothing else is done.
    case inProgress(DownloadRecord)
    /// Rule 3: the download is complete, but its file fails to open.
    case error(CourierError)
}

/// The DOWNLOAD button's policy (seed 002, rules 1–7, taken literally) and "Clear data".
///
/// Beyond the seed: a completed record carries its verified size (and SHA-256 when the
/// request had one), so a file truncated or replaced since is treated as missing (rule 2)
/// rather than opened.
public struct DownloadButton: Sendable {
    /// The engine the button drives.
    public let downloader: Downloader
    /// Checks that a file opens; by default it opens it for reading and reads a byte.
    public let opens: @Sendable (URL) throws -> Void
    /// Whether `open` also re-hashes the file against the stored SHA-256 (slow for big files).
    public var verifyChecksumOnOpen: Bool

    /// Makes the button's policy.
    public init(downloader: Downloader, verifyChecksumOnOpen: Bool = false, opens: @escaping @Sendable (URL) throws -> Void = DownloadButton.defaultOpen) {
        self.downloader = downloader
        self.opens = opens
        self.verifyChecksumOnOpen = verifyChecksumOnOpen
    }

    /// Opens the file for reading and reads one byte.
    public static let defaultOpen: @Sendable (URL) throws -> Void = { url in
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw FileErrors.error(errno, "open", url, .read)
        }
        defer { close(fd) }
        var byte: UInt8 = 0
        guard read(fd, &byte, 1) >= 0 else { throw FileErrors.error(errno, "read", url, .read) }
    }

    /// What the UI calls when DOWNLOAD is pressed: the record's state in the seed's terms,
    /// judged by ``DownloadButtonRules``.
    public func press(_ request: DownloadRequest) async throws -> DownloadButtonAction {
        let record = try await downloader.record(id: request.id)
        switch DownloadButtonRules.decide(holding(record), opens: opens) {
        case let .open(file): return .open(file)
        case let .error(error): return .error(error)
        case .inProgress:
            if let record { return .inProgress(record) }   // always: only a record is in progress
            return .downloadStarted(try await download(request))
        case .download: return .downloadStarted(try await download(request))
        }
    }

    /// What a record holds, in the seed's terms.
    func holding(_ record: DownloadRecord?) -> DownloadButtonRules.Holding {
        guard let record else { return .nothing }
        switch record.state {
        case .completed:
            let file = downloader.configuration.rootDirectory.appendingPathComponent(record.localFinalPath)
            return .complete(file: file, present: fileIsThere(record, file))
        case .queued, .downloading, .handedOff: return .inProgress
        case .paused, .failed: return .stopped
        }
    }

    /// "Clear data": removes the record and the file (final and partial).
    public func clearData(id: String) async throws {
        let record = try await downloader.record(id: id)
        if record != nil { try await downloader.cancel(id: id) }
        if let record {
            unlink(downloader.configuration.rootDirectory.appendingPathComponent(record.localFinalPath).path)
        }
    }

    /// Rule 7: before any download, the previous task(s) for that video go, record and file:
    /// the request's own, and every record of its media group (same `mediaType` and
    /// `mediaId`) whatever its id. Another group's tasks (another version, another video)
    /// are left alone.
    private func download(_ request: DownloadRequest) async throws -> DownloadRecord {
        if let type = request.mediaType, let media = request.mediaId {
            for earlier in try await downloader.database.records(mediaType: type, mediaId: media) where earlier.id != request.id {
                try await clearData(id: earlier.id)
            }
        }
        try await clearData(id: request.id)
        unlink(downloader.configuration.rootDirectory.appendingPathComponent(try SafePath.validateRelative(request.destination)).path)
        return try await downloader.enqueue(request)
    }

    /// The file exists, has the verified size, and (when asked) the verified SHA-256.
    private func fileIsThere(_ record: DownloadRecord, _ file: URL) -> Bool {
        var st = stat()
        guard lstat(file.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return false }
        if let total = record.totalBytes, Int64(st.st_size) != total { return false }
        if verifyChecksumOnOpen, let expected = record.expectedSHA256 {
            return (try? DownloadRun.sha256(of: file, length: Int64(st.st_size))) == expected   // a file that cannot be read is not the expected file
        }
        return true
    }
}
