/// What a caller asks the downloader to fetch.
public struct DownloadRequest: Sendable, Equatable {
    /// The download's id, chosen by the caller (`doc_42`): 1 to 200 letters, digits or `._:-`.
    public var id: String
    /// The http or https URL.
    public var url: String
    /// The final file's path, relative to the downloader's root directory.
    public var destination: String
    /// A caller-defined group: media id.
    public var mediaId: String?
    /// A caller-defined group: media type.
    public var mediaType: String?
    /// The SHA-256 the file must have (64 hex digits), checked before the file is put in place.
    public var sha256: String?
    /// The size the file must have, when the caller knows it (a media source's announced
    /// size): a reply that announces another size fails with `E_SIZE_MISMATCH` before a byte
    /// of it is written (the partial goes); a reply of unannounced length fails once it runs
    /// past it, and one that ends short resumes while a validator ties its bytes and each
    /// reply adds to them (else it fails).
    public var expectedSize: Int64?
    /// Higher runs first.
    public var priority: Int
    /// Connections to fetch it over (1 to 16): more than 1 splits a large, range-capable
    /// file into byte ranges fetched in parallel (aria2's `-x`/`-s`); it falls back to one
    /// by itself. `nil`: ``DownloaderConfiguration/connectionsPerDownload``.
    public var connections: Int?
    /// When the download completed earlier and its file is still in place: ask the server
    /// whether the file changed (`If-None-Match` / `If-Modified-Since`) instead of calling it
    /// done. A 304 keeps the file (one request, no body); a new version is downloaded,
    /// verified, and only then put in place of the old one (curl's `-z`, wget's `-N`).
    /// `false`: a completed download with its file in place is left alone.
    public var revalidate: Bool

    /// Makes a request.
    public init(id: String, url: String, destination: String, mediaId: String? = nil, mediaType: String? = nil, sha256: String? = nil, priority: Int = 0,
                connections: Int? = nil, revalidate: Bool = false, expectedSize: Int64? = nil) {
        self.id = id
        self.url = url
        self.destination = destination
        self.mediaId = mediaId
        self.mediaType = mediaType
        self.sha256 = sha256
        self.priority = priority
        self.connections = connections.map { max(1, min($0, 16)) }
        self.revalidate = revalidate
        self.expectedSize = expectedSize
    }
}
