import Courier
import Foundation

/// Attachments uploaded with tus 1.0 (resumable: ``TusUploader``) and read back over plain
/// HTTP: tus defines how bytes go up, not where a finished file is served, so the adapter
/// takes both places. A finished upload is `<filesURL>/<filename>`, which is where
/// downloads (through the resumable engine) and deletes go.
public final class TusRemoteStorage: ResumableRemoteStorage, ResumableUploadStorage {
    /// The tus client.
    public let uploader: TusUploader
    private let files: HTTPRemoteStorage

    /// Makes an adapter: `endpoint` is the tus creation URL, `filesURL` where finished
    /// files are served; `headers` (auth) go with every request and are never persisted;
    /// `transport`: the app's HTTP stack (its `Downloader`'s `transport`), `nil` for the
    /// platform's default.
    public init(endpoint: URL, filesURL: String, headers: [(name: String, value: String)] = [], chunkSize: Int64 = 8 << 20,
                transport: (any HTTPTransport)? = nil) throws {
        uploader = try TusUploader(endpoint: endpoint, headers: headers, chunkSize: chunkSize, transport: transport)
        files = try HTTPRemoteStorage(baseURL: filesURL, headers: headers, transport: transport)
    }

    /// Reads `tus+http://host/files?files=http://host/data` (or `tus+https://…`): the tus
    /// endpoint, and in `files=` where finished files are served.
    public convenience init(url: String, headers: [(name: String, value: String)] = [], transport: (any HTTPTransport)? = nil) throws {
        let (endpoint, files) = try UploadRemoteURL.split(url, kind: "tus",
                                                          form: "a tus remote is tus+http(s)://host/tus-endpoint?files=http(s)://host/where-files-are-served")
        try self.init(endpoint: endpoint, filesURL: files, headers: headers, transport: transport)
    }

    /// Releases both HTTP clients, awaited.
    public func shutdown() async throws {
        try await uploader.shutdown()
        try await files.shutdown()
    }

    /// Uploads the file with tus; nothing is persisted, so a new call starts from zero
    /// (``upload(fileAt:attachment:journal:)`` is the one that resumes).
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        try await upload(fileAt: file, attachment: attachment, journal: try .memory(id: "once"))
    }

    /// Uploads the file with tus, going on where the journal's upload stopped.
    public func upload(fileAt file: URL, attachment: Attachment, journal: UploadJournal) async throws {
        _ = try await uploader.upload(file, metadata: try Self.metadata(file, attachment), journal: journal)
    }

    /// The creation's `Upload-Metadata`: the attachment's name and type.
    static func metadata(_ file: URL, _ attachment: Attachment) throws -> [String: String] {
        var metadata = ["filename": try SafePath.validateRelative(attachment.filename)]
        if let type = attachment.mediaType { metadata["filetype"] = type }
        return metadata
    }

    /// GETs the finished file into `destination` (the queue uses the resumable engine instead).
    public func download(_ attachment: Attachment, to destination: URL) async throws { try await files.download(attachment, to: destination) }

    /// DELETEs the finished file; 404 counts as done.
    public func delete(_ attachment: Attachment) async throws { try await files.delete(attachment) }

    /// `<filesURL>/<filename>`.
    public func downloadURL(for attachment: Attachment) async throws -> String { try await files.downloadURL(for: attachment) }

    /// The adapter's headers.
    public func downloadHeaders(for attachment: Attachment) async throws -> [(name: String, value: String)] {
        try await files.downloadHeaders(for: attachment)
    }
}
