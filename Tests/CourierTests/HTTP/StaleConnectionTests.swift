import Foundation
import HTTPTypes
import Testing
@testable import CourierCore

/// Which requests are sent again at once after meeting a connection the server had closed
/// (RFC 9112 §9.3.1), and how an origin is told apart.
@Suite struct StaleConnectionTests {
    @Test func onlyWhatIsSafeToRepeatIsSentAgain() {
        // Nothing went out: any method.
        #expect(StaleConnection.mayResend(.post, nothingSent: true, reusedConnection: false))
        // Something went out on a connection that may have been reused: GET and HEAD only.
        #expect(StaleConnection.mayResend(.get, nothingSent: false, reusedConnection: true))
        #expect(StaleConnection.mayResend(.head, nothingSent: false, reusedConnection: true))
        for method in [HTTPRequest.Method.put, .patch, .post, .delete] {
            #expect(!StaleConnection.mayResend(method, nothingSent: false, reusedConnection: true), "\(method)")
        }
        // A fresh connection that failed: a failure like any other.
        #expect(!StaleConnection.mayResend(.get, nothingSent: false, reusedConnection: false))
    }

    @Test func anOriginIsTheSchemeAndAuthorityAsWritten() {
        #expect(KeepAliveOrigins.origin(of: "http://127.0.0.1:8080/a/b.bin?x=1") == "http://127.0.0.1:8080")
        #expect(KeepAliveOrigins.origin(of: "https://cdn.example.com?x") == "https://cdn.example.com")
        #expect(KeepAliveOrigins.origin(of: "https://cdn.example.com") == "https://cdn.example.com")
        #expect(KeepAliveOrigins.origin(of: "not a url") == "not a url")
    }

    @Test func aKeepAliveReplyMakesReusePossibleForItsOriginOnly() {
        let origins = KeepAliveOrigins(idleTime: .seconds(30))
        #expect(!origins.mayReuse("http://a:1"))
        origins.replyEnded("http://a:1")
        #expect(origins.mayReuse("http://a:1") && !origins.mayReuse("http://b:1"))
        let expired = KeepAliveOrigins(idleTime: .zero)
        expired.replyEnded("http://a:1")
        #expect(!expired.mayReuse("http://a:1"))
    }
}
