/// What to ask the server for, given what the partial file holds and what we stored about it.
///
/// Resume only when it is safe: the partial is non-empty, the earlier reply was resumable
/// (not compressed), and something ties the kept bytes to a version of the resource — a
/// strong ETag or Last-Modified (sent in `If-Range`), or at least a known total size that
/// the 206 must repeat. Otherwise start from zero.
public struct ResumePlan: Equatable, Sendable {
    /// The offset asked for with `Range: bytes=offset-`; 0 means a plain full request.
    public let offset: Int64
    /// The validator sent in `If-Range`, when resuming with one.
    public let validator: Validator?
    /// The complete size the earlier replies announced, when known.
    public let knownTotal: Int64?
    /// The partial file's length before this request; more than `offset` when the partial
    /// is to be discarded.
    public let partialLength: Int64
    /// The validators of a finished file already in place that this download would
    /// replace: sent as `If-None-Match` / `If-Modified-Since` on a request from zero, so an
    /// unchanged file costs a 304 and no body.
    public let held: HeldFile?

    /// The validators of a finished file in place (see ``held``).
    public struct HeldFile: Equatable, Sendable {
        /// The finished file's ETag, sent as `If-None-Match`.
        public var etag: String?
        /// The finished file's `Last-Modified`, sent as `If-Modified-Since` when there is no ETag.
        public var lastModified: String?
        /// Makes one from the validators the finished file was saved with.
        public init(etag: String?, lastModified: String?) {
            self.etag = etag
            self.lastModified = lastModified
        }
        /// Whether there is anything to ask with.
        public var isEmpty: Bool { etag == nil && lastModified == nil }
    }

    /// Plans the next request.
    /// - Parameters:
    ///   - partialLength: the real length of the `.partial` file (the truth of progress).
    ///   - etag: the ETag stored from the earlier reply.
    ///   - lastModified: the Last-Modified stored from the earlier reply.
    ///   - totalBytes: the complete size stored from the earlier reply.
    ///   - resumable: `false` when the earlier reply cannot be resumed (compressed body).
    ///   - held: the validators of the finished file this download would replace, if any.
    public init(partialLength: Int64, etag: String?, lastModified: String?, totalBytes: Int64?, resumable: Bool, held: HeldFile? = nil) {
        self.partialLength = partialLength
        let validator = Validator.choose(etag: etag, lastModified: lastModified)
        self.knownTotal = totalBytes
        if partialLength > 0, resumable, validator != nil || totalBytes != nil {
            self.offset = partialLength
            self.validator = validator
        } else {
            self.offset = 0
            self.validator = nil
        }
        // Conditional only from zero: with bytes kept, the new version is already coming.
        self.held = offset == 0 && held?.isEmpty == false ? held : nil
    }

    /// Whether the request asks "has it changed?" (a 304 then means the file in place is current).
    public var isConditional: Bool { held != nil }

    /// Whether the plan throws away bytes the partial holds.
    public var discardsPartial: Bool { partialLength > 0 && offset == 0 }

    /// The headers to send: always `Accept-Encoding: identity`; when resuming, `Range`
    /// and (with a validator) `If-Range`; when a finished file is held, `If-None-Match`
    /// (any ETag, weak ones too: RFC 9110 §13.1.2 compares weakly) and else
    /// `If-Modified-Since` (a server ignores it when If-None-Match is present).
    public var requestHeaders: [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Accept-Encoding", "identity")]
        if offset > 0 {
            headers.append(("Range", "bytes=\(offset)-"))
            if let validator { headers.append(("If-Range", validator.ifRangeValue)) }
        } else if let held {
            if let etag = held.etag { headers.append(("If-None-Match", etag)) }
            else if let lastModified = held.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        }
        return headers
    }
}
