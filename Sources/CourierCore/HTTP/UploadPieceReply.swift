import HTTPTypes

/// What a server's reply to an upload piece confirms: the one rule for an S3 part's ETag
/// and a tus chunk's offset, whoever sent the piece (the engine, or a background upload
/// task whose reply is read after the fact).
public enum UploadPieceReply {
    /// An ETag without quotes (`"…"` or `&quot;…&quot;`), in lower case.
    public static func normalizedETag(_ etag: String) -> String {
        etag.replacingOccurrences(of: "&quot;", with: "").replacingOccurrences(of: "\"", with: "").lowercased()
    }

    /// Why an S3 part's ETag cannot be the part that was sent, or `nil` when it can: an
    /// ETag that is an MD5 (32 hex digits) must be the MD5 of the bytes, except for objects
    /// encrypted with KMS or a customer key, whose ETags are not MD5s (S3 checked
    /// `Content-MD5` itself for those).
    public static func partETagMismatch(_ etag: String?, headers: HTTPFields, md5Hex: String) -> String? {
        guard let etag else { return nil }
        let encryption = headers.first(name: "x-amz-server-side-encryption")?.lowercased() ?? ""
        if encryption.hasPrefix("aws:kms") || headers.first(name: "x-amz-server-side-encryption-customer-algorithm") != nil { return nil }
        let plain = normalizedETag(etag)
        if plain.count == 32, plain.allSatisfy(\.isHexDigit), plain != md5Hex {
            return "the server's ETag \(plain) is not the MD5 of the bytes sent (\(md5Hex))"
        }
        return nil
    }

    /// What a reply to a handed-off piece confirms.
    public enum Outcome: Equatable, Sendable {
        /// The server holds the piece: S3 with this ETag; tus up to `offset`.
        case confirmed(etag: String?, offset: Int64?)
        /// Nothing is known to be held: the engine sends the piece again (or, for tus,
        /// asks the server's offset first).
        case notConfirmed(String)
    }

    /// Judges the reply to `piece` (of an upload speaking `kind`).
    public static func judge(_ kind: UploadProtocol, piece: UploadHandOffPiece, status: Int, headers: HTTPFields) -> Outcome {
        switch kind {
        case .s3:
            guard status == 200, let etag = headers.first(name: "ETag") else { return .notConfirmed("the part's reply was \(status)") }
            if let mismatch = partETagMismatch(etag, headers: headers, md5Hex: piece.md5) { return .notConfirmed(mismatch) }
            return .confirmed(etag: etag, offset: nil)
        case .tus:
            // TusPatchOutcome: the rule the engine's own PATCHes follow. Less than the whole
            // chunk is left to the next run, which asks the server's offset (tus's truth).
            switch try? TusPatchOutcome.judge(status: status, offsetHeader: headers.first(name: "Upload-Offset"), sentFrom: piece.offset, length: piece.size) {
            case .confirmed(let offset)? where offset == piece.offset + piece.size: return .confirmed(etag: nil, offset: offset)
            case .confirmed(let offset)?: return .notConfirmed("the server holds \(offset) bytes, not \(piece.offset + piece.size)")
            default: return .notConfirmed("the chunk's reply was \(status)")
            }
        case .ietf:
            // A 2xx to an append means every byte of it arrived; an offset it names must be the
            // append's end. Anything else is left to the next run's offset request.
            let end = piece.offset + piece.size
            guard (200..<300).contains(status) else { return .notConfirmed("the append's reply was \(status)") }
            if let said = headers.first(name: "Upload-Offset"), said.trimmingCharacters(in: .whitespaces) != String(end) {
                return .notConfirmed("the server says offset \(said.prefix(20)), not \(end)")
            }
            return .confirmed(etag: nil, offset: end)
        }
    }
}
