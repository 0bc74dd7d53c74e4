/// A way for the origin to misbehave, set per file with ``CourierOrigin/setFault(_:for:)``
/// or per request with query parameters (`?drop=1000&status=503&count=2`).
///
/// Every field is off by default; combine them freely.
public struct Fault: Sendable, Equatable, Codable {
    /// Close the connection after sending this many body bytes (query: `drop`).
    public var dropAfterBytes: Int64?
    /// Answer 200 with the whole file to range requests (query: `norange=1`).
    public var ignoreRange = false
    /// Honour `Range` but ignore `If-Range`: the server that would splice two versions of a
    /// file if the client let it (query: `noifrange=1`).
    public var ignoreIfRange = false
    /// Give a new ETag (and Last-Modified) on every request, as if the file changed (query: `changeetag=1`).
    public var changeETag = false
    /// Send weak ETags, `W/"…"` (query: `weak=1`).
    public var weakETag = false
    /// Send the ETag without its quotes (`ETag: 5d-18c…`), as some servers do: not a valid
    /// entity tag (query: `unquoted=1`).
    public var unquotedETag = false
    /// Apply the fault only to range requests that do not start at byte 0 (the ranges of a
    /// segmented download after its first request) (query: `onlyranges=1`).
    public var onlyRanges = false
    /// Send neither ETag nor Last-Modified (query: `novalidators=1`).
    public var noValidators = false
    /// Send the body gzip-encoded, whatever Accept-Encoding says (query: `gzip=1`).
    public var gzip = false
    /// Answer this status instead of the file… (query: `status`)
    public var failStatus: Int?
    /// …for the first this many requests to the path, then behave (query: `count`; 0 = always).
    public var failCount = 0
    /// Send `Retry-After: N` with ``failStatus`` (query: `retryafter`).
    public var retryAfter: Int?
    /// Stop sending for ``stallSeconds`` after this many body bytes (query: `stall`).
    public var stallAfterBytes: Int64?
    /// How long a stall lasts (query: `stallsecs`, default 3600).
    public var stallSeconds: Double = 3600
    /// Seconds before the reply's head is sent: a server slow to answer (query: `headerdelay`).
    /// ``CourierOrigin/endStalls()`` ends it early, as it does a stall.
    public var headerDelaySeconds: Double?
    /// Serve a range from this many bytes before the asked start, aligned down to a
    /// multiple of this value, with an honest Content-Range (query: `align`).
    public var alignRangeStart: Int64?
    /// Claim in Content-Range a start this many bytes later than the bytes sent (query: `crshift`).
    public var contentRangeShift: Int64 = 0
    /// Claim this complete length in Content-Range (query: `crtotal`).
    public var contentRangeTotal: Int64?
    /// Announce a Content-Length this many bytes off the real body, then send the real body
    /// (negative: announce fewer and send more) (query: `cldelta`).
    public var contentLengthDelta: Int64 = 0
    /// Send at most this many bytes per second on the connection (query: `rate`).
    public var bytesPerSecond: Int64?
    /// Answer with a redirect to this location (query: `redirect`).
    public var redirectTo: String?
    /// The redirect's status (default 302) (query: `redirectstatus`).
    public var redirectStatus = 302
    /// Send `Content-Disposition: attachment; filename="…"` with this name (query: `disposition`).
    public var contentDisposition: String?
    /// Send the file's bytes as they are, labelled with this `Content-Encoding` (the file
    /// is already encoded: a precompressed `.gz`, or a decompression bomb) (query: `encoding`).
    public var contentEncoding: String?
    /// Send no `Content-Length`: the body is of unannounced length and ends when the
    /// connection closes, so a drop looks like a clean end (query: `nolength`).
    public var noContentLength = false
    /// Only apply the fault to this many requests to the path, then behave (0 = always)
    /// (query: `times`). ``bytesPerSecond`` is not a misbehaviour and always applies.
    public var times = 0

    /// No fault.
    public init() {}

    /// Builds a fault from query parameters; unknown ones are ignored.
    public init(query: [String: String]) {
        // Bounded, so a hostile query (`?crshift=9223372036854775807`, `?stallsecs=1e30`,
        // `?status=-1`) is a large fault, not an overflow that takes the server down.
        func int(_ k: String) -> Int64? { query[k].flatMap { Int64($0) }.map { min(max($0, -(1 << 50)), 1 << 50) } }
        func seconds(_ k: String) -> Double? { query[k].flatMap { Double($0) }.map { $0.isNaN ? 0 : min(max($0, 0), 86_400) } }
        func status(_ k: String, in allowed: ClosedRange<Int64>) -> Int? { int(k).flatMap { allowed.contains($0) ? Int($0) : nil } }
        func flag(_ k: String) -> Bool { query[k] == "1" || query[k] == "true" }
        dropAfterBytes = int("drop")
        ignoreRange = flag("norange")
        ignoreIfRange = flag("noifrange")
        changeETag = flag("changeetag")
        weakETag = flag("weak")
        unquotedETag = flag("unquoted")
        onlyRanges = flag("onlyranges")
        noValidators = flag("novalidators")
        gzip = flag("gzip")
        failStatus = status("status", in: 100...599)
        failCount = int("count").map { Int($0) } ?? 0
        retryAfter = int("retryafter").map { Int($0) }
        stallAfterBytes = int("stall")
        stallSeconds = seconds("stallsecs") ?? 3600
        headerDelaySeconds = seconds("headerdelay")
        alignRangeStart = int("align")
        contentRangeShift = int("crshift") ?? 0
        contentRangeTotal = int("crtotal")
        contentLengthDelta = int("cldelta") ?? 0
        bytesPerSecond = int("rate")
        redirectTo = query["redirect"]
        redirectStatus = status("redirectstatus", in: 300...399) ?? 302
        times = int("times").map { Int($0) } ?? 0
        contentDisposition = query["disposition"]
        contentEncoding = query["encoding"]
        noContentLength = flag("nolength")
    }

    /// Whether any field is set.
    public var isEmpty: Bool { self == Fault() }
}
