/// What proves that the bytes we hold and the bytes the server would send belong to the same
/// version of a resource: the value sent in `If-Range`.
///
/// Only a strong ETag or a Last-Modified date qualifies (RFC 9110 §13.1.5); a weak ETag
/// never does.
public enum Validator: Equatable, Sendable {
    /// A strong entity tag.
    case strongETag(EntityTag)
    /// A `Last-Modified` date, sent verbatim as the server gave it.
    case lastModified(String)

    /// Chooses the validator from stored response headers: a strong ETag, else a
    /// Last-Modified that parses as an HTTP date, else none.
    public static func choose(etag: String?, lastModified: String?) -> Validator? {
        if let etag, let tag = try? EntityTag(parsing: etag), !tag.isWeak {   // an ETag that does not parse is no validator
            return .strongETag(tag)
        }
        if let lastModified, HTTPDate.parse(lastModified) != nil {
            return .lastModified(lastModified.trimmingHTTPWhitespace())
        }
        return nil
    }

    /// The `If-Range` header value.
    public var ifRangeValue: String {
        switch self {
        case let .strongETag(tag): return tag.description
        case let .lastModified(date): return date
        }
    }
}
