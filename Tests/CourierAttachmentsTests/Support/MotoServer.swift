import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible server for the tests: the endpoint `scripts/test` started
/// ($COURIER_S3_ENDPOINT), else a `moto_server` this process starts on a free loopback port.
final class MotoServer: @unchecked Sendable { // set once, then read-only
    static let shared = MotoServer()
    private(set) var endpoint: URL?
    private var process: Process?

    private init() {
        if let env = ProcessInfo.processInfo.environment["COURIER_S3_ENDPOINT"], let url = URL(string: env) {
            endpoint = url
            return
        }
        let port = Int.random(in: 20_000...40_000)
        let p = Process()
        // The server dies with this process (PR_SET_PDEATHSIG survives exec): moto ignores
        // SIGTERM, and an atexit handler does not run when the test runner is killed.
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", """
            import ctypes, os, signal
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)
            os.execvp('moto_server', ['moto_server', '-H', '127.0.0.1', '-p', '\(port)'])
            """]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return }
        process = p
        let url = URL(string: "http://127.0.0.1:\(port)")!
        for _ in 0..<100 {
            if Self.isUp(port: port) { endpoint = url; break }
            usleep(100_000)
        }
        atexit { MotoServer.shared.process?.interrupt() }
    }

    var isAvailable: Bool { endpoint != nil }

    private static func isUp(port: Int) -> Bool {
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
}
