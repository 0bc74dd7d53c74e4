import Foundation

/// What the system is asked for when a piece of an upload is handed off: an upload task
/// that sends the file at ``UploadHandOffPiece/bodyPath`` with this request (a presigned S3
/// `UploadPart` with the part's digests, or a tus `PATCH` from the piece's offset). Made by
/// the upload's storage; sent by `BackgroundTransfers`, which reads the reply by
/// ``UploadPieceReply``.
public struct UploadTaskRequest: Sendable {
    /// The piece, recorded in the store before the task is made.
    public let piece: UploadHandOffPiece
    /// The protocol the reply is judged by.
    public let kind: UploadProtocol
    /// The HTTP method: `PUT` for an S3 part, `PATCH` for a tus chunk.
    public let method: String
    /// Where the piece goes: a presigned part URL, or the tus upload URL.
    public let url: String
    /// The request's headers, in order (digests, `Upload-Offset`, `Tus-Resumable`, …).
    public let headers: [(name: String, value: String)]
    /// Whether `headers` hold the caller's credentials (a tus server's auth headers): such a
    /// request goes to the system only with `handsOffCredentials`, as a download's does.
    public let carriesCredentials: Bool

    /// Makes one, as the upload's storage does for each piece it hands off.
    public init(piece: UploadHandOffPiece, kind: UploadProtocol, method: String, url: String, headers: [(name: String, value: String)],
                carriesCredentials: Bool = false) {
        self.piece = piece
        self.kind = kind
        self.method = method
        self.url = url
        self.headers = headers
        self.carriesCredentials = carriesCredentials
    }
}

/// A feature whose uploads go to the system at the same moment as the downloads
/// (`AppLifecycle` hands both off at its hand-off phase): an attachment queue, say.
public protocol BackgroundUploading: Sendable {
    /// Stops the feature's uploads and returns what is left of each as upload-task requests,
    /// each piece recorded in the store and its body written under `folder`.
    func handOffUploads(to folder: URL) async -> [UploadTaskRequest]
    /// Every handed-off piece of upload `uploadId` ended (confirmed, or given back): the
    /// feature goes on with it (its next run sends what the server does not hold and
    /// completes). Called for every upload; a feature ignores the ids that are not its own.
    func uploadHandOffEnded(uploadId: String) async
    /// The system's tasks for upload `uploadId` have sent `inFlight` bytes of the pieces not
    /// yet confirmed (about ten times a second at most): the feature reports its progress
    /// (what the server confirmed, stored, plus these). Calls may arrive out of order, also
    /// after ``uploadHandOffEnded(uploadId:)``.
    func uploadHandOffProgress(uploadId: String, inFlight: Int64) async
}
