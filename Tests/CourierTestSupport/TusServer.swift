import Foundation

/// A real tus 1.0 server for the tests (`scripts/tus-server`: aiohttp-tus from PyPI): the one
/// `scripts/test` started ($COURIER_TUS_URL, $COURIER_TUS_DIR, $COURIER_TUS_LOG), else one
/// this process starts on a free loopback port (and which dies with it).
public final class TusServer: @unchecked Sendable { // set once, then read-only
    public static let shared = TusServer()
    /// `http://127.0.0.1:<port>`: the tus endpoint is `/files`, finished files `/data/<name>`.
    public private(set) var base: URL?
    /// Where finished files land.
    public private(set) var directory: URL?
    private var log: URL?
    private var process: Process?

    public var isAvailable: Bool { base != nil }
    public var endpoint: URL { base!.appendingPathComponent("files") }
    public var filesURL: String { base!.appendingPathComponent("data").absoluteString }

    private init() {
        let env = ProcessInfo.processInfo.environment
        if let url = env["COURIER_TUS_URL"].flatMap(URL.init(string:)), let dir = env["COURIER_TUS_DIR"], let log = env["COURIER_TUS_LOG"] {
            (base, directory, self.log) = (url, URL(fileURLWithPath: dir), URL(fileURLWithPath: log))
            return
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/tus-server").standardizedFileURL
        let port = Int.random(in: 40_001...50_000)
        let folder = temporaryFolder("courier-tus")
        let logURL = folder.appendingPathComponent("patches.log")
        guard let p = launchServer(["python3", script.path, "\(port)", folder.appendingPathComponent("data").path, logURL.path]) else { return }
        process = p
        // Not listening: aiohttp-tus is not installed, and the tus tests are skipped.
        if waitUntilListening(port: port, p) {
            (base, directory, log) = (URL(string: "http://127.0.0.1:\(port)")!, folder.appendingPathComponent("data"), logURL)
        }
    }

    /// One `PATCH` as the server saw it.
    public struct Patch: Sendable, Equatable {
        public let offset: Int64
        /// Body bytes the server read, also of a request cut short.
        public let received: Int64
        public let status: Int
        /// Whether it carried `Upload-Checksum`.
        public let checksum: Bool
    }

    /// The `PATCH`es of the upload at `uploadURL`, in order, from the server's log.
    public func patches(of uploadURL: String) -> [Patch] {
        guard let path = URL(string: uploadURL)?.path else { return [] }
        return allPatches().filter { $0.upload == path }.map(\.patch)
    }

    /// Every `PATCH` the server saw, in order (for uploads whose URL the test does not know).
    public func allPatches() -> [(upload: String, patch: Patch)] {
        guard let log, let text = try? String(contentsOf: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let upload = object["upload"] as? String else { return nil }
            return (upload, Patch(offset: Int64(object["offset"] as? String ?? "") ?? -1, received: (object["received"] as? NSNumber)?.int64Value ?? 0,
                                  status: (object["status"] as? NSNumber)?.intValue ?? 0, checksum: object["checksum"] as? Bool ?? false))
        }
    }
}

/// Whether something accepts connections on the loopback port.
func isListening(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &addr) { ptr in
        ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}
