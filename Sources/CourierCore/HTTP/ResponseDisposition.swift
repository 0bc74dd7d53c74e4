import Foundation
import HTTPTypes

/// Where and how to write a reply's body.
public struct BodyPlan: Equatable, Sendable {
    /// The file offset of the body's first byte; the partial is cut to this length first.
    public var offset: Int64
    /// How many bytes the body must carry, when the reply says (Content-Length, or the
    /// Content-Range length). `nil` for a compressed or chunked body of unknown length.
    public var expectedBodyLength: Int64?
    /// The complete size of the file, when known.
    public var totalBytes: Int64?
    /// The reply's ETag, to store for the next `If-Range`.
    public var etag: String?
    /// The reply's Last-Modified, to store for the next `If-Range`.
    public var lastModified: String?
    /// Whether an interrupted body can be resumed later (false for compressed bodies).
    public var resumable: Bool
    /// The reply's `Content-Type`, when it has one.
    public var contentType: String? = nil
}

/// What a reply means for a download: the pure decision at the heart of resume.
///
/// Rules (design.md, pitfalls.md): 206 is appended only at the offset its `Content-Range`
/// names, when its total and validator agree with what we hold; 200 always starts over;
/// 416 completes only when `*/N` equals the partial's length; a compressed reply is written
/// but never resumed.
public enum ResponseDisposition: Equatable, Sendable {
    /// Write the body as the plan says.
    case write(BodyPlan)
    /// The partial already holds the whole file of this many bytes.
    case alreadyComplete(totalBytes: Int64)
    /// 304 to a conditional request: the finished file in place is the server's current one.
    case notModified
    /// Discard the partial and ask again from zero, without `Range`.
    case restart(reason: String)
    /// Follow a redirect to this location (relative or absolute, unresolved).
    case redirect(location: String)
    /// A passing failure: try again, after the server's `Retry-After` when it gave one.
    case retry(CourierError, after: TimeInterval?)
    /// Access denied or gone: ask the URL refresher for a fresh URL once, else fail.
    case refreshURL(CourierError)
    /// A failure that trying again will not fix.
    case fail(CourierError)

    /// Decides what a reply means.
    /// - Parameters:
    ///   - plan: the plan the request was made from.
    ///   - status: the reply's status code.
    ///   - headers: the reply's headers.
    ///   - now: the current time, for `Retry-After` dates.
    public static func decide(plan: ResumePlan, status: Int, headers: HTTPFields, now: Date = Date()) -> ResponseDisposition {
        let etag = headers.first(name: "ETag")
        let lastModified = headers.first(name: "Last-Modified")
        let compressed = isCompressed(headers)
        let contentLength = headers.first(name: "Content-Length").flatMap { HTTPNumber.parse($0.trimmingHTTPWhitespace()) }
        if headers.first(name: "Content-Length") != nil, contentLength == nil || Set(headers[canonicalForm: "Content-Length"].map { String($0) }).count > 1 {
            return .fail(CourierError(.protocolViolation, "the reply breaks HTTP: its Content-Length is malformed or conflicting", httpStatus: status))
        }

        switch status {
        case 200:
            let length = compressed ? nil : contentLength
            return .write(BodyPlan(offset: 0, expectedBodyLength: length, totalBytes: length, etag: etag, lastModified: lastModified, resumable: !compressed && !rangesRefused(headers),
                                   contentType: headers.first(name: "Content-Type")))

        case 206:
            // A 206 that does not fit the bytes kept is mended by starting from zero; with
            // nothing kept, the same request would get the same reply: it breaks HTTP, at once.
            func broken(_ reason: String) -> ResponseDisposition {
                plan.offset == 0 ? .fail(CourierError(.protocolViolation, "the reply breaks HTTP: \(reason)", httpStatus: status)) : .restart(reason: reason)
            }
            if compressed {
                return broken("206 with a compressed body: ranges over encoded bytes cannot be resumed")
            }
            guard let rawRange = headers.first(name: "Content-Range") else {
                return broken("206 without Content-Range")
            }
            guard let range = try? ContentRange(parsing: rawRange), case let .satisfied(first, last, complete) = range else {   // unparsable: the else branch says what that means
                return broken("206 with a malformed Content-Range")
            }
            if let contentLength, contentLength != last - first + 1 {
                return broken("206 whose Content-Length disagrees with its Content-Range")
            }
            if first > plan.offset {
                return broken("206 starts at \(first), after the \(plan.offset) bytes asked from")
            }
            if let known = plan.knownTotal, let complete, known != complete {
                return .restart(reason: "the file's size changed from \(known) to \(complete)")
            }
            if validatorChanged(plan: plan, etag: etag, lastModified: lastModified) {
                return .restart(reason: "the file changed on the server (validator differs)")
            }
            let total = complete ?? plan.knownTotal
            return .write(BodyPlan(
                offset: first, expectedBodyLength: last - first + 1, totalBytes: total,
                etag: etag ?? storedETag(plan), lastModified: lastModified ?? storedLastModified(plan), resumable: true,
                contentType: headers.first(name: "Content-Type")))

        case 304:
            guard plan.isConditional else {
                return .fail(CourierError(.protocolViolation, "304 Not Modified to a request that asked no condition", httpStatus: status))
            }
            return .notModified

        case 416:
            if let raw = headers.first(name: "Content-Range"), let range = try? ContentRange(parsing: raw),   // unparsable: treated as absent
               case let .unsatisfied(complete) = range, plan.offset > 0, complete == plan.offset,
               plan.knownTotal == nil || plan.knownTotal == complete {
                return .alreadyComplete(totalBytes: complete)
            }
            return .restart(reason: "416: the range we asked for does not fit the file")

        case 301, 302, 303, 307, 308:
            guard let location = headers.first(name: "Location"), !location.isEmpty else {
                return .fail(CourierError(.protocolViolation, "redirect \(status) without a Location", httpStatus: status))
            }
            return .redirect(location: location)

        case 401, 403, 410:
            return .refreshURL(CourierError(.accessDenied, "the server answered \(status) \(reasonPhrase(status))", httpStatus: status))

        case 408, 429:
            return .retry(CourierError(.httpClientError, "the server answered \(status) \(reasonPhrase(status))", httpStatus: status), after: retryAfter(headers, now: now))

        case 501, 505:
            return .fail(CourierError(.httpServerError, "the server answered \(status) \(reasonPhrase(status))", httpStatus: status))

        case 500...599:
            return .retry(CourierError(.httpServerError, "the server answered \(status) \(reasonPhrase(status))", httpStatus: status), after: retryAfter(headers, now: now))

        case 400...499:
            return .fail(CourierError(.httpClientError, "the server answered \(status) \(reasonPhrase(status))", httpStatus: status))

        default:
            return .fail(CourierError(.protocolViolation, "unexpected status \(status)", httpStatus: status))
        }
    }

    /// Whether the body is content-coded (anything but `identity`), and so not resumable.
    public static func isCompressed(_ headers: HTTPFields) -> Bool {
        headers[canonicalForm: "Content-Encoding"].contains { coding in
            let c = coding.trimmingCharacters(in: .whitespaces).lowercased()
            return !c.isEmpty && c != "identity"
        }
    }

    private static func rangesRefused(_ headers: HTTPFields) -> Bool {
        headers.first(name: "Accept-Ranges")?.trimmingHTTPWhitespace().lowercased() == "none"
    }

    private static func validatorChanged(plan: ResumePlan, etag: String?, lastModified: String?) -> Bool {
        switch plan.validator {
        case let .strongETag(ours):
            guard let etag else { return false }
            guard let theirs = try? EntityTag(parsing: etag) else { return true }   // unparsable: treated as a change
            return !ours.strongMatches(theirs)
        case let .lastModified(ours):
            guard let lastModified else { return false }
            return HTTPDate.parse(lastModified) != HTTPDate.parse(ours)
        case nil:
            return false
        }
    }

    private static func storedETag(_ plan: ResumePlan) -> String? {
        if case let .strongETag(tag) = plan.validator { return tag.description }
        return nil
    }

    private static func storedLastModified(_ plan: ResumePlan) -> String? {
        if case let .lastModified(date) = plan.validator { return date }
        return nil
    }

    private static func retryAfter(_ headers: HTTPFields, now: Date) -> TimeInterval? {
        headers.first(name: "Retry-After").flatMap { try? RetryAfter.parse($0, now: now) }   // an unparsable Retry-After is absent: the backoff applies
    }

    private static let reasonPhrases: [Int: String] = [
        200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content",
        300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
        307: "Temporary Redirect", 308: "Permanent Redirect",
        400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout",
        409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
        414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
        421: "Misdirected Request", 422: "Unprocessable Content", 423: "Locked", 425: "Too Early", 426: "Upgrade Required",
        428: "Precondition Required", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
        451: "Unavailable For Legal Reasons",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout", 505: "HTTP Version Not Supported", 507: "Insufficient Storage", 511: "Network Authentication Required",
    ]

    /// The standard reason phrase of a status (`""` for one HTTP does not name).
    package static func reasonPhrase(_ status: Int) -> String {
        reasonPhrases[status] ?? ""
    }
}
