import Foundation
import Courier
import GRDB

/// Where an attachment stands (seed 001). Stored as an integer.
public enum AttachmentState: Int, Codable, Sendable, CaseIterable, CustomStringConvertible {
    /// To be fetched from remote storage.
    case queuedDownload = 0
    /// Saved locally, to be sent to remote storage.
    case queuedUpload = 1
    /// Deleted locally, to be deleted in remote storage.
    case queuedDelete = 2
    /// Local and remote agree.
    case synced = 3
    /// No longer referenced by the app's data; kept as a cache until the cache limit.
    case archived = 4

    /// The seed's name: `QUEUED_DOWNLOAD`, `QUEUED_UPLOAD`, `QUEUED_DELETE`, `SYNCED`, `ARCHIVED`.
    public var description: String {
        switch self {
        case .queuedDownload: return "QUEUED_DOWNLOAD"
        case .queuedUpload: return "QUEUED_UPLOAD"
        case .queuedDelete: return "QUEUED_DELETE"
        case .synced: return "SYNCED"
        case .archived: return "ARCHIVED"
        }
    }
}

/// One attachment record in the local-only attachments table.
public struct Attachment: Sendable, Equatable, Codable {
    /// The attachment's id, referenced by the app's data.
    public var id: String
    /// The file's name inside the attachments directory (and its key in remote storage).
    public var filename: String
    /// The media type, such as `image/jpeg`.
    public var mediaType: String?
    /// Where it stands.
    public var state: AttachmentState
    /// Milliseconds since 1970 of the last change.
    public var timestamp: Int64
    /// Size in bytes, once known.
    public var size: Int64?
    /// Whether it has ever been synced (an archived one can then be restored from cache).
    public var hasSynced: Bool
    /// The app's extra data, usually JSON.
    public var metaData: String?
    /// The local file, relative to the attachments directory, once it exists.
    public var localURI: String?

    /// Makes a record.
    public init(id: String, filename: String, mediaType: String? = nil, state: AttachmentState, timestamp: Int64 = Attachment.now(),
                size: Int64? = nil, hasSynced: Bool = false, metaData: String? = nil, localURI: String? = nil) {
        self.id = id
        self.filename = filename
        self.mediaType = mediaType
        self.state = state
        self.timestamp = timestamp
        self.size = size
        self.hasSynced = hasSynced
        self.metaData = metaData
        self.localURI = localURI
    }

    /// Milliseconds since 1970, now.
    public static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A row of the attachments table. The table is in the app's database, so the app's own
    /// SQL can put anything there (`state = 'SYNCED'`, a text size): such a row is
    /// `E_ATTACHMENT_CORRUPT`, never a trap (GRDB's plain subscripts trap on a value they
    /// cannot convert; `decode` throws).
    init(row: Row) throws {
        do {
            let rawState: Int? = try row.decode(forColumn: "state")
            guard let state = rawState.flatMap(AttachmentState.init(rawValue:)) else {
                throw AttachmentError.corruptRecord("unknown state \(row["state"] as DatabaseValue)")
            }
            self.init(id: try row.decode(forColumn: "id"), filename: try row.decode(forColumn: "filename"), mediaType: try row.decode(forColumn: "media_type"),
                      state: state, timestamp: try row.decode(forColumn: "timestamp"), size: try row.decode(forColumn: "size"),
                      hasSynced: try row.decode(forColumn: "has_synced"), metaData: try row.decode(forColumn: "meta_data"), localURI: try row.decode(forColumn: "local_uri"))
        } catch let error as CourierError {
            throw error
        } catch {
            throw AttachmentError.corruptRecord("a row of the attachments table does not read: \(error)")
        }
    }
}

/// What the app's watched query says should be present.
public struct WatchedAttachmentItem: Sendable, Equatable {
    /// The attachment id.
    public var id: String
    /// The file name, when the app knows it.
    public var filename: String?
    /// The extension, used to name the file `<id>.<ext>` when there is no file name.
    public var fileExtension: String?
    /// The app's extra data.
    public var metaData: String?

    /// Makes an item; give a file name or an extension.
    public init(id: String, filename: String? = nil, fileExtension: String? = nil, metaData: String? = nil) {
        self.id = id
        self.filename = filename
        self.fileExtension = fileExtension
        self.metaData = metaData
    }

    /// The file name to use: the given one, else `<id>.<extension>`, else `<id>`.
    public var resolvedFilename: String {
        if let filename, !filename.isEmpty { return filename }
        if let fileExtension, !fileExtension.isEmpty { return "\(id).\(fileExtension)" }
        return id
    }
}
