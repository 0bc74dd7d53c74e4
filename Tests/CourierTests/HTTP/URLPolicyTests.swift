import Foundation
import Testing
@testable import CourierCore

/// URLs that cannot be sent as written are refused (issue 31, points 1 and 2): never another
/// request, never a crash.
@Suite struct URLPolicyTests {
    @Test(arguments: [
        "http://127.0.0.1:99999/x",                 // crashed the CLI (and every later resume)
        "http://127.0.0.1:0/x",
        "http://example.com:65536/",
        "http://example.com:123456789012345678901/",   // Foundation reads it as no port: 80
        "http://example.com:8o/",
        "http://user:pw@example.com:70000/",
        "http://[::1]:99999/",
        "http://example.com/a%FFb/hello.txt",       // was sent as GET /
        "http://example.com/%C3/x",
    ])
    func refused(_ text: String) {
        let code = (try? URLPolicy.validate(text)).map { _ in "accepted" } ?? (catchCode { try URLPolicy.validate(text) })
        #expect(code == "E_INVALID_URL", "\(text)")
    }

    @Test(arguments: [
        "http://127.0.0.1:65535/x", "http://example.com:/x", "http://example.com/a%C3%A9b", "https://[::1]:8443/f",
        "http://user:pa:ss@example.com/x", "http://example.com/x?q=%FF",   // a query is sent as written by both stacks
    ])
    func accepted(_ text: String) throws {
        _ = try URLPolicy.validate(text)
    }

    /// The authority's port, read on the bytes (the rule `refused` and `accepted` rely on).
    @Test(arguments: [
        ("http://example.com:080/x", 80), ("http://example.com:/x", nil), ("http://example.com/x:81", nil),
        ("http://u:p@example.com:81#x:82", 81), ("http://[::1]/", nil), ("http://[::1]:8443?x", 8443), ("http://[::1:80/", nil),
        ("example.com:81", nil), ("http://example.com:99999999999999999999/", Int.max), ("http://example.com:8\u{301}0/", Int.max),
        ("http://exämple.com:8080/", 8080), ("http://example.com:-1/", Int.max), ("http://", nil), ("http://:5", 5),
        // Where reading Characters differed: a combining mark after a colon, or before the path's.
        ("http://example.com:\u{301}80/", Int.max), ("http://h/\u{301}:99999", nil),
    ] as [(String, Int?)])
    func explicitPort(_ text: String, _ port: Int?) {
        #expect(URLPolicy.explicitPort(text) == port, "\(text)")
    }

    private func catchCode(_ body: () throws -> URL) -> String {
        do { _ = try body(); return "accepted" } catch let e as CourierError { return e.code.rawValue } catch { return "\(error)" }
    }
}
