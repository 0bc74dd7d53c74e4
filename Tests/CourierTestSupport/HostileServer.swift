import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A server written to lie: plain sockets on loopback, no HTTP library, so nothing refuses
/// to misbehave. It reads each request's head (up to the blank line), counts it, and writes
/// whatever its script says: headers that never end, a status line that is not one, a
/// chunked body with a bad size, a reset. The hostile-server suite (issue 28) runs the
/// `courier` binary against it over both transports.
public final class HostileServer: @unchecked Sendable {
    /// One thing the server does on a connection, in order.
    public enum Step: Sendable {
        /// Writes these bytes.
        case send(Data)
        /// Writes these bytes again and again until the client hangs up (at most `limit` bytes).
        case sendForever(Data, limit: Int = 1 << 30)
        /// Waits this many seconds.
        case pause(Double)
        /// Resets the connection (an RST, not a FIN).
        case reset
        /// Closes the connection (a FIN).
        case close

        /// Writes this text.
        public static func text(_ s: String) -> Step { .send(Data(s.utf8)) }
    }

    /// What to do with request number `index` (from 0, across connections), given its head.
    public typealias Script = @Sendable (_ head: String, _ index: Int) -> [Step]

    public let port: Int
    private let listener: Int32
    private let script: Script
    private let lock = NSLock()
    private var heads: [String] = []
    private var connectionCount = 0
    private var stopped = false

    public init(_ script: @escaping Script) throws {
        self.script = script
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        guard bound == 0, listen(listener, 64) == 0 else { close(listener); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        self.listener = listener
        Thread { [self] in acceptLoop() }.start()
    }

    /// `http://127.0.0.1:PORT` + path.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The heads of the requests received so far.
    public var requests: [String] { lock.withLock { heads } }
    /// Connections accepted so far (a client that hangs up before its request counts here only).
    public var connections: Int { lock.withLock { connectionCount } }

    /// Stops accepting; connections in progress end on their own.
    public func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if lock.withLock({ stopped }) { return }
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            lock.withLock { connectionCount += 1 }
            Thread { [self] in serve(fd) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            // One request head: up to its blank line (a body, for the requests Courier sends
            // to these servers, is never there).
            var headEnd: Int?
            while headEnd == nil {
                if let r = Self.blankLine(in: buffer) { headEnd = r; break }
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { close(fd); return }
                buffer += chunk[0..<n]
            }
            let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
            buffer.removeFirst(headEnd! + 4)
            let index: Int = lock.withLock { heads.append(head); return heads.count - 1 }
            for step in script(head, index) {
                switch step {
                case .send(let data):
                    guard Self.write(fd, data) else { close(fd); return }
                case .sendForever(let data, let limit):
                    var sent = 0
                    while sent < limit, Self.write(fd, data) { sent += data.count }
                    close(fd); return
                case .pause(let seconds):
                    Thread.sleep(forTimeInterval: seconds)
                case .reset:
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    close(fd); return
                case .close:
                    close(fd); return
                }
            }
        }
    }

    private static func blankLine(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
        return nil
    }

    private static func write(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
    }
}
