import AsyncHTTPClient
import CourierAsyncHTTPClient
import CourierURLSession
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import NIOHTTP1
import Testing
@testable import CourierCore

/// Issue 28: a reply that breaks HTTP is E_PROTOCOL, in words, and not retried, from either
/// transport's parser.
struct ReplyViolationTests {
    @Test(arguments: [
        ("too many header bytes seen; overflow detected", "header block"),          // SwiftNIO
        ("Too large response headers: 307762 > 307200", "header block"),           // libcurl
        ("Out of memory", "header block"),                                         // libcurl, one endless line
        ("invalid character in chunk size header", "chunked"),
        ("Illegal or missing hexadecimal sequence in chunked-encoding", "chunked"),
        ("unexpected content-length header", "Content-Length"),
        ("Invalid Content-Length: value", "Content-Length"),
        ("invalid HTTP status code", "not an HTTP reply"),
        ("invalid constant string", "not an HTTP reply"),
        ("Unsupported HTTP version in response", "not an HTTP reply"),
        ("Received HTTP/0.9 when not allowed", "not an HTTP reply"),
        ("invalid character in header", "header line"),
    ])
    func aParsersComplaintIsSaidInWords(_ complaint: String, _ expected: String) {
        #expect(ReplyViolation.words(complaint)?.contains(expected) == true, "\(String(describing: ReplyViolation.words(complaint)))")
    }

    @Test(arguments: ["Recv failure: Connection reset by peer", "stream ended at an unexpected time", "timed out", "",
                      "Empty reply from server", "Failed to connect to chunks.cdn.example port 443 after 3 ms: No route to host",
                      "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to content-length.example:443"])
    func aDroppedConnectionIsNotAViolation(_ complaint: String) {
        #expect(ReplyViolation.words(complaint) == nil)
    }

    @Test func aHeaderBlockOver64KiBIsRefused() throws {
        var fields = HTTPFields()
        for i in 0..<60 { fields.append(HTTPField(name: HTTPField.Name("X-Pad-\(i)")!, value: String(repeating: "a", count: 1000))) }
        try ReplyViolation.checkHeaderBlock(fields, url: "http://h/f")
        for i in 60..<70 { fields.append(HTTPField(name: HTTPField.Name("X-Pad-\(i)")!, value: String(repeating: "a", count: 1000))) }
        #expect(throws: CourierError.self) { try ReplyViolation.checkHeaderBlock(fields, url: "http://h/f") }
    }

    @Test(arguments: [HTTPParserError.headerOverflow, .invalidChunkSize, .invalidStatus, .invalidConstant, .unexpectedContentLength, .invalidContentLength, .lfExpected])
    func swiftNIOsParserErrorsArePermanent(_ error: HTTPParserError) {
        let mapped = AsyncHTTPClientTransport.map(error, url: "http://h/f") as? CourierError
        #expect(mapped?.code == .protocolViolation && mapped?.isPassing == false, "\(String(describing: mapped))")
        #expect(mapped?.message.contains("breaks HTTP") == true)
    }

    /// AsyncHTTPClient's "cancelled" is the caller's cancellation only when the caller's task
    /// is cancelled; otherwise the client cancelled it (a connection closed or retired under
    /// it), and the engine must retry it rather than take it for a stop.
    @Test func theClientsOwnCancellationIsADroppedConnection() async {
        let mapped = AsyncHTTPClientTransport.map(HTTPClientError.cancelled, url: "https://h/f") as? CourierError
        #expect(mapped?.code == .network, "\(String(describing: mapped))")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return AsyncHTTPClientTransport.map(HTTPClientError.cancelled, url: "https://h/f")
        }
        #expect(await task.value is CancellationError)
    }

    @Test func aReplyCutShortStillPasses() {
        for error in [HTTPParserError.invalidEOFState, .closedConnection] {
            let mapped = AsyncHTTPClientTransport.map(error, url: "http://h/f") as? CourierError
            #expect(mapped?.isPassing == true, "\(error): \(String(describing: mapped))")
        }
    }

    @Test func urlSessionsParseFailuresArePermanent() {
        let cases: [URLError] = [
            URLError(.cannotParseResponse),
            URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "Invalid status line"]),
            URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "Too large response headers: 307762 > 307200"]),
            URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "Unsupported HTTP version in response"]),
        ]
        for error in cases {
            let mapped = URLSessionTransport.map(error, url: "http://h/f") as? CourierError
            #expect(mapped?.code == .protocolViolation && mapped?.isPassing == false, "\(error): \(String(describing: mapped))")
        }
        let reset = URLSessionTransport.map(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "Recv failure: Connection reset by peer"]), url: "http://h/f") as? CourierError
        #expect(reset?.code == .network)
        // FoundationNetworking's "Empty reply from server" (a restart, a dropped keep-alive) passes.
        let empty = URLSessionTransport.map(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "Empty reply from server"]), url: "http://h/f") as? CourierError
        #expect(empty?.code == .network && empty?.isPassing == true, "\(String(describing: empty))")
        // An old curl's reset through TLS is not a certificate problem.
        let sslReset = URLSessionTransport.map(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "SSL read: error:00000000:lib(0):func(0):reason(0), errno 104"]), url: "https://h/f") as? CourierError
        #expect(sslReset?.code == .network, "\(String(describing: sslReset))")
    }
}
