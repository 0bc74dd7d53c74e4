import Foundation
import HTTPTypes

/// A reply that breaks HTTP's own rules: a header block that never ends, a status line that
/// is not one, malformed chunking, a Content-Length that is negative or said twice two ways.
/// The same server sends the same bytes again, so no retry mends it: it is
/// ``CourierError/Code/protocolViolation`` (not passing), said in words, for every caller of
/// either transport (downloads, uploads, S3 and tus calls, the media server's API).
package enum ReplyViolation {
    /// The largest header block Courier reads: 64 KiB, as servers and browsers allow. The
    /// transports' parsers stop an endless one at their own limits (SwiftNIO's 80 KiB,
    /// libcurl's 300 KiB); a block they accepted over this one is refused here.
    package static let maxHeaderBlock = 64 << 10

    /// What a parser's complaint (SwiftNIO's `HTTPParserError`, libcurl's text through
    /// FoundationNetworking) says about the reply, in words; `nil` when it is not about the
    /// reply's form (a dropped connection, a timeout).
    package static func words(_ complaint: String) -> String? {
        let text = complaint.lowercased()
        // libcurl's whole message for one header line over its 100 KiB line limit.
        if text == "out of memory" { return "its header block runs past the size limit" }
        for (marks, words) in table where marks.contains(where: text.contains) { return words }
        return nil
    }

    /// Each parser's own fixed wording (never a bare word, which a host name in the same
    /// message could hold: curl names the host in most of its errors).
    private static let table: [([String], String)] = [
        (["too many header bytes seen", "too large response headers", "header overflow"],
         "its header block runs past the size limit"),
        (["chunked-encoding", "chunk size", "bad chunk"], "its chunked encoding is malformed"),
        (["invalid content-length", "content-length header", "conflicting content-length"], "its Content-Length is malformed or conflicting"),
        (["invalid constant string", "invalid http version", "unsupported http version", "received http/0.9", "invalid http status",
          "invalid status line", "weird server reply"],
         "it is not an HTTP reply (no valid status line)"),
        (["invalid character in header", "header without colon", "lf character expected", "illegal characters used"],
         "a header line is malformed"),
        (["trailing garbage"], "it sends bytes past its end"),
    ]

    /// The error for a reply from `url` that broke the rules as `words` say.
    package static func error(_ words: String, url: String, underlying: (any Error)? = nil) -> CourierError {
        CourierError(.protocolViolation, "the reply from \(Redactor.redact(url)) breaks HTTP: \(words)", underlying: underlying)
    }

    /// Throws when the reply's header block is over ``maxHeaderBlock``.
    package static func checkHeaderBlock(_ fields: HTTPFields, url: String) throws {
        var size = 0
        for field in fields { size += field.name.rawName.utf8.count + field.value.utf8.count + 4 }
        if size > maxHeaderBlock {
            throw error("its header block is \(size / 1024) KiB, over the \(maxHeaderBlock >> 10) KiB limit", url: url)
        }
    }
}
