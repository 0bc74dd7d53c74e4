import Foundation

/// A real nginx for the tests, speaking HTTP/2 (and HTTP/1.1, by ALPN) over TLS with a
/// self-signed certificate on a free loopback port; it serves ``root`` and dies with this
/// process. `scripts/test` installs nginx; without it the suites that need it are skipped.
///
/// Routes: `/f/NAME` the file; `/slow/NAME` the file at 512 KiB/s per request. Every
/// request is logged as `protocol connection status bytes_sent range uri`.
public final class NginxServer: @unchecked Sendable { // set once, then read-only
    public static let shared = NginxServer()
    /// `https://127.0.0.1:<port>`.
    public private(set) var base: String?
    /// What it serves.
    public let root = temporaryFolder("courier-nginx-www")
    /// The CA certificate to trust (the server's own, self-signed).
    public private(set) var certificate: String?
    private let folder = temporaryFolder("courier-nginx")
    private var process: Process?

    public var isAvailable: Bool { base != nil }

    private init() {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile(atPath:)),
              SelfSignedCertificate.isAvailable, let cert = try? SelfSignedCertificate(in: folder) else { return }
        let port = Int.random(in: 50_001...60_000)
        let conf = folder.appendingPathComponent("nginx.conf")
        let config = """
            daemon off;
            worker_processes 1;
            \(getuid() == 0 ? "user root;" : "")
            pid \(folder.path)/nginx.pid;
            error_log \(folder.path)/error.log;
            events { worker_connections 512; }
            http {
              log_format courier '$server_protocol $connection $status $bytes_sent "$http_range" $request_uri';
              access_log \(folder.path)/access.log courier;
              client_body_temp_path \(folder.path)/body; proxy_temp_path \(folder.path)/proxy;
              fastcgi_temp_path \(folder.path)/fastcgi; uwsgi_temp_path \(folder.path)/uwsgi; scgi_temp_path \(folder.path)/scgi;
              keepalive_requests 100000;
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(cert.certificate);
                ssl_certificate_key \(cert.key);
                location /f/ { alias \(root.path)/; }
                location /slow/ { alias \(root.path)/; limit_rate 512k; }
              }
            }
            """
        guard (try? config.write(to: conf, atomically: true, encoding: .utf8)) != nil else { return }
        guard let p = launchServer([nginx, "-c", conf.path, "-p", folder.path]) else { return }
        process = p
        if waitUntilListening(port: port, p) { (base, certificate) = ("https://127.0.0.1:\(port)", cert.certificate) }
    }

    /// One request as nginx logged it.
    public struct Logged: Sendable, Equatable {
        /// `HTTP/2.0` or `HTTP/1.1`.
        public let proto: String
        /// nginx's serial number of the connection it came on.
        public let connection: Int
        public let status: Int
        public let bytesSent: Int64
        /// The `Range` header, `-` when none.
        public let range: String
        public let uri: String
    }

    /// The requests for paths starting with `prefix`, oldest first.
    public func requests(_ prefix: String) -> [Logged] {
        guard let text = try? String(contentsOf: folder.appendingPathComponent("access.log"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", maxSplits: 5).map(String.init)
            guard f.count == 6, let connection = Int(f[1]), let status = Int(f[2]), let sent = Int64(f[3]), f[5].hasPrefix(prefix) else { return nil }
            return Logged(proto: f[0], connection: connection, status: status, bytesSent: sent, range: f[4].trimmingCharacters(in: CharacterSet(charactersIn: "\"")), uri: f[5])
        }
    }
}
