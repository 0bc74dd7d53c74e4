import Foundation

/// A real nginx for the tests, speaking HTTP/2 (and HTTP/1.1, by ALPN) over TLS with a
/// self-signed certificate on a free loopback port; it serves ``root`` and dies with this
/// process. `scripts/test` installs nginx; without it the suites that need it are skipped.
///
/// Routes: `/f/NAME` the file; `/slow/NAME` the file at 512 KiB/s per request;
/// `/o/PORT/PATH` a reverse proxy to `http://127.0.0.1:PORT/PATH` (unbuffered both ways, the
/// path and query as the client sent them), which puts HTTP/2 in front of a test's origin
/// (``proxied(_:)``; a redirect to an origin on loopback comes back through it too).
/// Every request is logged as `protocol connection status bytes_sent range end-time
/// duration uri`.
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

    /// `http://127.0.0.1:PORT/PATH` as a URL of this server that proxies to it over HTTP/2;
    /// `nil` for any other URL or when nginx is not there.
    public func proxied(_ url: String) -> String? {
        let prefix = "http://127.0.0.1:"
        guard let base, url.hasPrefix(prefix) else { return nil }
        let rest = url.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), Int(rest[..<slash]) != nil else { return nil }
        return "\(base)/o/\(rest[..<slash])\(rest[slash...])"
    }

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
              log_format courier '$server_protocol $connection $status $bytes_sent "$http_range" $msec $request_time $request_uri';
              access_log \(folder.path)/access.log courier;
              client_body_temp_path \(folder.path)/body; proxy_temp_path \(folder.path)/proxy;
              fastcgi_temp_path \(folder.path)/fastcgi; uwsgi_temp_path \(folder.path)/uwsgi; scgi_temp_path \(folder.path)/scgi;
              keepalive_requests 100000;
              map $request_uri $origin_port { ~^/o/(?<p>[0-9]+)/ $p; }
              map $request_uri $origin_rest { ~^/o/[0-9]+(?<r>/.*)$ $r; }
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(cert.certificate);
                ssl_certificate_key \(cert.key);
                location /f/ { alias \(root.path)/; }
                location /slow/ { alias \(root.path)/; limit_rate 512k; }
                location /o/ {
                  proxy_pass http://127.0.0.1:$origin_port$origin_rest;
                  proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $http_host;
                  proxy_buffering off; proxy_request_buffering off; client_max_body_size 0;
                  proxy_read_timeout 600s; proxy_send_timeout 600s;
                  proxy_redirect ~^http://127[.]0[.]0[.]1:([0-9]+)(/.*)?$ https://$http_host/o/$1$2;
                }
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
        /// When nginx read the request and how long it took to answer, in seconds.
        public let started: Double, took: Double
        public let uri: String

        /// `HTTP/2.0 206 bytes=100- 5000 B in 0.010 s`: what a failed expectation shows.
        public var summary: String { "\(proto) \(status) \(range) \(bytesSent) B in \(took) s" }
    }

    /// The requests for paths starting with `prefix`, in the order they came (nginx logs a
    /// request when it ends: a cancelled one may be written after a later one).
    public func requests(_ prefix: String) -> [Logged] {
        guard let text = try? String(contentsOf: folder.appendingPathComponent("access.log"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line -> Logged? in
            let f = line.split(separator: " ", maxSplits: 7).map(String.init)
            guard f.count == 8, let connection = Int(f[1]), let status = Int(f[2]), let sent = Int64(f[3]),
                  let ended = Double(f[5]), let took = Double(f[6]), f[7].hasPrefix(prefix) else { return nil }
            let range = f[4].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            return Logged(proto: f[0], connection: connection, status: status, bytesSent: sent, range: range, started: ended - took, took: took, uri: f[7])
        }.sorted { $0.started < $1.started }
    }
}
