import Foundation
import HTTPTypes

/// What a reply to one range of a segmented download means: the range rules here, every
/// other status by the same rules as any reply (``ResponseDisposition``), so a range honours
/// `Retry-After`, asks for a fresh URL on 401/403/410 and follows redirects exactly like a
/// whole download does.
public enum RangeReply: Equatable, Sendable {
    /// Exactly the range asked for, of the same file: write it.
    case write
    /// The file changed, or the server stopped serving this range as asked: the whole
    /// download starts over (two versions are never spliced).
    case restart(reason: String)
    /// Follow a redirect to this location.
    case redirect(location: String)
    /// A passing failure: try the range again, after the server's `Retry-After` if any.
    case retry(CourierError, after: TimeInterval?)
    /// Access denied or gone: ask for a fresh URL once, else fail.
    case refreshURL(CourierError)
    /// A failure that trying again will not fix.
    case fail(CourierError)

    /// Decides what a reply to `Range: bytes=first-last` means for a download of `total`
    /// bytes that started with `validator`.
    public static func decide(first: Int64, last: Int64, total: Int64, validator: Validator, status: Int, headers: HTTPFields, now: Date = Date()) -> RangeReply {
        switch status {
        case 206:
            if ResponseDisposition.isCompressed(headers) { return .restart(reason: "a compressed range reply") }
            guard let raw = headers.first(name: "Content-Range"), let range = try? ContentRange(parsing: raw),   // unparsable: the else branch restarts
                  case let .satisfied(gotFirst, gotLast, complete) = range else {
                return .restart(reason: "a range reply without a usable Content-Range")
            }
            guard gotFirst == first, gotLast <= last, gotLast >= gotFirst, complete == total else {
                return .restart(reason: "a range reply for bytes \(gotFirst)-\(gotLast)/\(complete.map(String.init) ?? "*"), not \(first)-\(last)/\(total)")
            }
            if let length = headers.first(name: "Content-Length").flatMap({ HTTPNumber.parse($0.trimmingHTTPWhitespace()) }), length != gotLast - gotFirst + 1 {
                return .restart(reason: "a range reply whose Content-Length disagrees with its Content-Range")
            }
            guard matches(validator, etag: headers.first(name: "ETag"), lastModified: headers.first(name: "Last-Modified")) else {
                return .restart(reason: "the file changed on the server (a range's validator differs)")
            }
            return .write
        case 200:
            return .restart(reason: "the server answered a range with the whole file (it changed, or stopped serving ranges)")
        default:
            // Every other status means what it means for any request.
            let plan = ResumePlan(partialLength: first, etag: nil, lastModified: nil, totalBytes: total, resumable: true)
            switch ResponseDisposition.decide(plan: plan, status: status, headers: headers, now: now) {
            case let .redirect(location): return .redirect(location: location)
            case let .retry(error, after): return .retry(error, after: after)
            case let .refreshURL(error): return .refreshURL(error)
            case let .fail(error): return .fail(error)
            case let .restart(reason): return .restart(reason: reason)
            case .write, .alreadyComplete, .notModified:
                return .restart(reason: "a range answered \(status)")
            }
        }
    }

    /// Whether a reply's validators are the download's: a strong ETag compared strongly
    /// (RFC 9110 §8.8.3.2), or the Last-Modified date when that is the validator. A reply
    /// that omits the validator's header is judged by the other rules (If-Range was sent).
    static func matches(_ validator: Validator, etag: String?, lastModified: String?) -> Bool {
        switch validator {
        case let .strongETag(ours):
            guard let etag else { return true }
            guard let theirs = try? EntityTag(parsing: etag) else { return false }   // unparsable: not the same file
            return ours.strongMatches(theirs)
        case let .lastModified(ours):
            guard let lastModified else { return true }
            return HTTPDate.parse(lastModified) == HTTPDate.parse(ours)
        }
    }
}
