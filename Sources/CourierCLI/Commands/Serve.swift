import ArgumentParser
import Courier
import CourierDraftServer
import CourierOrigin
import Dispatch
import Foundation

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a directory over HTTP with Range, If-Range, ETag and Last-Modified, for testing downloads.",
        discussion: """
        Misbehave per request with query parameters: drop=N (close after N body bytes), norange=1 \
        (200 to ranges), changeetag=1, weak=1, novalidators=1, gzip=1, status=S&count=K \
        (answer S to the first K requests), retryafter=N, stall=N&stallsecs=T, headerdelay=T (seconds before \
        the reply's head), align=N, crshift=N, \
        crtotal=N, cldelta=N (lie about Content-Length), rate=N (bytes/s), redirect=URL, times=K.
        """)

    @Argument(help: "The directory to serve.")
    var directory: String

    @Option(name: .long, help: "The port (0: any free port).")
    var port: Int = 8080

    @Option(name: .long, help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Flag(name: .long, help: "Accept PUT (store the body as a file) and DELETE.")
    var writable = false

    @Option(name: .long, help: ArgumentHelp("With --writable, also accept resumable uploads on this port (0: any free port): the IETF draft Resumable Uploads for HTTP, interop versions 3, 5 and 6, as URLSession speaks it. A POST to a path creates an upload, stored at that path of the directory once complete; each request is printed with its offset and body bytes.", valueName: "port"))
    var resumableUploadsPort: Int?

    @Option(name: .long, help: "Send bodies at most this fast per connection, 2M or bytes per second (every path; ?rate= overrides).")
    var rate: ByteSize?

    func validate() throws {
        if resumableUploadsPort != nil, !writable { throw ValidationError("--resumable-uploads-port needs --writable: it stores what is uploaded.") }
        if resumableUploadsPort != nil, ["0.0.0.0", "::", "[::]"].contains(host) {
            throw ValidationError("--resumable-uploads-port names each upload's URL with --host: give the address clients reach (not \(host)).")
        }
    }

    func run() async throws {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue else {
            Terminal.error("courier: E_FNF: \(directory) is not a directory")
            throw ExitCode(ExitCodes.storage)
        }
        let origin: CourierOrigin
        do {
            origin = try await CourierOrigin.start(directory: URL(fileURLWithPath: directory), host: host, port: port, writable: writable)
        } catch {
            let inUse = String(describing: error).contains("Address already in use")
            let message = inUse ? "port \(port) on \(host) is already in use: pick another with --port (0: any free port)"
                                : "cannot listen on \(host):\(port): \(error)"
            throw failure(CourierError(.invalidArgument, message))
        }
        if let rate = rate?.bytes, rate > 0 {
            var throttle = Fault()
            throttle.bytesPerSecond = rate
            origin.setDefaultFault(throttle)
        }
        Terminal.out("Serving \(directory) at http://\(host):\(origin.port)/ (Ctrl-C stops)")
        var drafts: DraftUploadServer?
        if let resumableUploadsPort {
            do {
                drafts = try await DraftUploadServer.start(directory: URL(fileURLWithPath: directory), host: host, port: resumableUploadsPort) { request in
                    Terminal.out("resumable upload: \(request.line)")
                }
            } catch {
                try? await origin.stop()   // ending with the error below either way
                throw failure(CourierError(.invalidArgument, "cannot accept resumable uploads on \(host):\(resumableUploadsPort): \(error)"))
            }
            Terminal.out("Resumable uploads (IETF draft, interop 3, 5, 6) at http://\(host):\(drafts?.port ?? 0)/")
        }
        let (stop, continuation) = AsyncStream<Void>.makeStream()
        let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { continuation.yield(); continuation.finish() }
            source.resume()
            return source
        }
        for await _ in stop { break }
        sources.forEach { $0.cancel() }
        try? await drafts?.stop()   // stopping: the origin is stopped next either way
        try await origin.stop()
        Terminal.error("Stopped.")
    }
}
