import Courier
import Foundation

/// Attachments uploaded with the IETF draft "Resumable Uploads for HTTP" (resumable:
/// ``DraftUploader``) and read back over plain HTTP. The draft names no metadata: an
/// attachment's upload is created at `<uploadsURL>/<filename>`, and the finished file is
/// `<filesURL>/<filename>`, where downloads (through the resumable engine) and deletes go.
public final class DraftRemoteStorage: ResumableRemoteStorage, ResumableUploadStorage {
    /// Where uploads are created: each attachment's creation URL is this plus its filename.
    public let uploadsURL: URL
    /// Bytes per append.
    public let chunkSize: Int64
    private let headers: [(name: String, value: String)]
    private let service: ServiceTransport
    private let system: (any SystemResumableUploading)?
    private let files: HTTPRemoteStorage

    /// Makes an adapter; `headers` (auth) go with every request to each URL's origin and are
    /// never persisted; `transport`: the app's HTTP stack (its `Downloader`'s `transport`),
    /// `nil` for the platform's default; `systemUploads`: the system's own resumable upload,
    /// which carries each upload where it exists (``DraftUploader``).
    public init(uploadsURL: URL, filesURL: String, headers: [(name: String, value: String)] = [], chunkSize: Int64 = 8 << 20,
                transport: (any HTTPTransport)? = nil, systemUploads: (any SystemResumableUploading)? = PlatformResumableUploads.make()) throws {
        guard let scheme = uploadsURL.scheme?.lowercased(), scheme == "http" || scheme == "https", uploadsURL.host != nil else {
            throw CourierError(.invalidURL, "resumable uploads go to an http(s) URL: \(uploadsURL.absoluteString.prefix(200))")
        }
        self.uploadsURL = uploadsURL
        self.chunkSize = max(1, chunkSize)
        self.headers = headers
        service = ServiceTransport(transport)
        system = systemUploads
        files = try HTTPRemoteStorage(baseURL: filesURL, headers: headers, transport: service.transport)
    }

    /// Reads `ietf+http://host/uploads?files=http://host/files` (or `ietf+https://…`): where
    /// uploads are created, and in `files=` where finished files are served.
    public convenience init(url: String, headers: [(name: String, value: String)] = [], transport: (any HTTPTransport)? = nil) throws {
        let (uploads, files) = try UploadRemoteURL.split(url, kind: "ietf",
                                                         form: "a resumable upload remote is ietf+http(s)://host/uploads?files=http(s)://host/where-files-are-served")
        try self.init(uploadsURL: uploads, filesURL: files, headers: headers, transport: transport)
    }

    /// Releases the HTTP client when this made it, awaited.
    public func shutdown() async throws {
        try await files.shutdown()
        try await service.shutdown()
    }

    /// The client for one attachment: its creation URL is the uploads URL and its filename.
    func uploader(for attachment: Attachment) throws -> DraftUploader {
        let name = try SafePath.validateRelative(attachment.filename)
        return try DraftUploader(target: uploadsURL.appendingPathComponent(name), headers: headers, chunkSize: chunkSize, transport: service.transport,
                                 systemUploads: system)
    }

    /// Uploads the file; nothing is persisted, so a new call starts from zero
    /// (``upload(fileAt:attachment:journal:)`` is the one that resumes).
    public func upload(fileAt file: URL, attachment: Attachment) async throws {
        try await upload(fileAt: file, attachment: attachment, journal: try .memory(id: "once"))
    }

    /// Uploads the file, going on where the journal's upload stopped.
    public func upload(fileAt file: URL, attachment: Attachment, journal: UploadJournal) async throws {
        _ = try await uploader(for: attachment).upload(file, journal: journal)
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
