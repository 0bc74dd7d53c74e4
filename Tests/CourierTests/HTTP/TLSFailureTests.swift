import Testing
@testable import CourierCore

/// A failed TLS handshake in words, from what BoringSSL, NIOSSL and URLSession say.
struct TLSFailureTests {
    @Test(arguments: [
        ("handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /x/.build/checkouts/swift-nio-ssl/Sources/CNIOBoringSSL/ssl/handshake.cc:320]))", "not trusted"),
        ("NIOSSLExtraError.failedToValidateHostname: Couldn't find <example.com> in certificate from peer", "another host"),
        ("untrusted", "not trusted"),
        ("expired", "expired"),
        ("error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER at /x/ssl/tls_record.cc:242", "does not speak TLS"),
        ("error:1000042e:SSL routines:OPENSSL_internal:TLSV1_ALERT_PROTOCOL_VERSION", "no TLS version"),
        ("something else entirely", "did not complete"),
    ])
    func aHandshakeFailureIsSaidInWords(_ detail: String, _ expected: String) {
        let words = TLSFailure.words(detail)
        #expect(words.contains(expected), "\(words)")
        #expect(!words.contains("/") && !words.contains(".cc"))
    }
}
