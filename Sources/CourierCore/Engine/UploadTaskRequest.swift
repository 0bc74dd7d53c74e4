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
    public let method: String
    public let url: String
    public let headers: [(name: String, value: String)]

    public init(piece: UploadHandOffPiece, kind: UploadProtocol, method: String, url: String, headers: [(name: String, value: String)]) {
        self.piece = piece
        self.kind = kind
        self.method = method
        self.url = url
        self.headers = headers
    }
}
