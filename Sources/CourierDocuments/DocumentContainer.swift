import Courier
import Foundation

/// Where a document's download stands. `nil` (unknown) is a state of its own: progress
/// streams stay open through it, and nothing infers existence or failure from it.
public enum DocumentDownloadStatus: Sendable, Equatable {
    /// Only a placeholder is here.
    case notDownloaded
    /// A transfer is under way.
    case downloading
    /// The local file is whole and current (seed 004's *current*).
    case current
    /// The transfer failed.
    case failed(CourierError)
}

/// A status and, when the container knows it, the percent downloaded (0…100), the bytes
/// received, and where the upload of a local change stands.
public struct DocumentState: Sendable, Equatable {
    /// The status; `nil` while unknown.
    public var status: DocumentDownloadStatus?
    /// Percent downloaded, when known. Advisory only: it may jump from 0 to 100.
    public var percent: Double?
    /// Bytes of the document received so far by a running download, when the container
    /// counts them. A count that moves is progress, even while the percent stands still.
    public var bytesReceived: Int64?
    /// The upload a local change owes (pending, failed, or in conflict); `nil` when there
    /// is nothing to send.
    public var upload: DocumentUploadStatus?

    /// Why the last upload of a local change failed for good, or conflicts; `nil` when none
    /// did. The local file stands either way.
    public var uploadFailure: CourierError? {
        switch upload {
        case .failed?, .conflict?: return upload?.error
        case .pending?, nil: return nil
        }
    }

    /// Makes a state.
    public init(status: DocumentDownloadStatus?, percent: Double? = nil, bytesReceived: Int64? = nil, upload: DocumentUploadStatus? = nil) {
        self.status = status
        self.percent = percent
        self.bytesReceived = bytesReceived
        self.upload = upload
    }
}

/// A synced folder whose files may be present, or placeholders of remote files (seed 004).
/// ``MirrorContainer`` is the portable one; `ICloudContainer` the Apple one.
public protocol DocumentContainer: Sendable {
    /// The folder.
    var root: URL { get }
    /// A direct filesystem check: the file, or its placeholder, is there.
    func entryExists(_ path: String) -> Bool
    /// Starts (or, with `restart`, restarts) the download of a placeholder.
    func startDownloading(_ path: String, restart: Bool) async throws
    /// The current status and percent.
    func state(of path: String) async -> DocumentState
    /// Reads the whole file under a shared coordination lock.
    func coordinatedRead(_ path: String) async throws -> Data
    /// Reads the file in chunks under a shared coordination lock.
    func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws
    /// Replaces the file atomically under an exclusive coordination lock, and queues its upload.
    func coordinatedWrite(_ path: String, data: Data) async throws
    /// Before a read of a present document: when the remote is reachable and has a newer
    /// version than the one the local copy came from (and no local change is owed), puts it
    /// in place. Offline, or on any failure, the local copy stands. The default does nothing
    /// (iCloud keeps its own copies current).
    func refresh(_ path: String) async
    /// Before a read of a document the container has never seen (no file, no placeholder):
    /// asks the remote, since open/read is the truth. The remote has it: the container makes
    /// it known (a placeholder) so the read downloads it. The remote's own "not found": nothing
    /// changes, and the read says `E_FNF`. A remote that cannot be asked: its error. The
    /// default does nothing (iCloud's metadata knows every item).
    func discover(_ path: String) async throws
}

extension DocumentContainer {
    /// Nothing to refresh.
    public func refresh(_ path: String) async {}
    /// Nothing to discover.
    public func discover(_ path: String) async throws {}
}

extension CourierError.Code {
    /// The text is not valid UTF-8 (`readInPlace` never returns a lossy string).
    public static let invalidEncoding = Self(rawValue: "E_ENCODING")
}
