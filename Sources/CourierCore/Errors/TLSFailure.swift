/// What a failed TLS handshake means, in words, from the TLS library's own account of it
/// (BoringSSL's error queue, NIOSSL's errors, URLSession's codes): the one place both
/// transports say it. The library's text, with the build machine's source paths in it, is
/// kept as the error's `underlying` (logged with `--verbose`), never put in the message.
public enum TLSFailure {
    /// The reason, for people.
    public static func words(_ detail: String) -> String {
        let text = detail.uppercased()
        if text.contains("FAILEDTOVALIDATEHOSTNAME") || text.contains("HOSTNAME") || text.contains("HOST NAME") {
            return "the server's certificate names another host"
        }
        if text.contains("EXPIRED") { return "the server's certificate has expired (or is not valid yet)" }
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("UNTRUSTED") || text.contains("SELF SIGNED") || text.contains("SELF-SIGNED")
            || text.contains("UNKNOWN_CA") || text.contains("SERVERCERTIFICATEUNTRUSTED") || text.contains("-1202") {
            return "the server's certificate is not trusted (an unknown or self-signed issuer; --cacert names one to trust)"
        }
        if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") || text.contains("PACKET_LENGTH_TOO_LONG") {
            return "the server does not speak TLS there (plain HTTP on an https URL?)"
        }
        if text.contains("PROTOCOL_VERSION") || text.contains("UNSUPPORTED_PROTOCOL") || text.contains("NO_SHARED_CIPHER") || text.contains("HANDSHAKE_FAILURE") {
            return "the server and Courier have no TLS version or cipher in common"
        }
        return "the handshake did not complete"
    }
}
