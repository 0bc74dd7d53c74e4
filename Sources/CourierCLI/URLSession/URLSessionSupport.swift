import Courier
import Foundation
import Logging

/// What only the URLSession build of the CLI (`courier-urlsession`) has: the URLSession
/// transport and background hand-off. `courier` itself does not link FoundationNetworking
/// (libcurl and some thirty more shared libraries, +7 MiB resident before the first byte on
/// Linux); a command that needs URLSession becomes `courier-urlsession`, with the same
/// arguments (`URLSessionBuild`).
public protocol URLSessionSupport: Sendable {
    /// A `URLSessionTransport`.
    func transport() -> any HTTPTransport
    /// A `BackgroundTransfers` for `downloader`, its kept files in `stashDirectory`.
    func handOffSession(_ downloader: Downloader, stashDirectory: URL, logger: Logger) -> any HandOffSession
}

/// The part of `BackgroundTransfers` the CLI uses.
public protocol HandOffSession: AnyObject, Sendable {
    var downloader: Downloader { get }
    /// False (a hidden test flag): an arrival is kept, then nothing more happens.
    var actsOnEvents: Bool { get set }
    func handOff(id: String) async throws -> Bool
    func handOffAll(among ids: Set<String>?) async -> [String]
    func handOffUploads(_ requests: [UploadTaskRequest]) async -> Int
    /// Upload tasks still running in the system.
    var uploadTasksInFlight: Int { get }
    func recover() async throws -> [String]
    func recoverUploads() async throws
    func invalidate()
}

/// The CLI's entry point, for both executables.
public enum CourierMain {
    /// Runs the command line; `urlSession` is `nil` in `courier`, which execs
    /// `courier-urlsession` when a command asks for URLSession.
    public static func run(urlSession: (any URLSessionSupport)?) async {
        URLSessionBuild.support = urlSession
        if urlSession == nil, URLSessionBuild.asksForURLSession(Array(CommandLine.arguments.dropFirst())),
           ProcessInfo.processInfo.environment["COURIER_PARSE_ONLY"] != "1" {
            do { try URLSessionBuild.becomeURLSessionBuild() } catch { CourierCommand.exit(withError: failure(error)) }
        }
        await CourierCommand.main()
    }
}

/// How `courier` finds URLSession when a command needs it: in itself (`courier-urlsession`),
/// or by becoming the `courier-urlsession` installed next to it, with the same arguments.
enum URLSessionBuild {
    /// Set once, before any command runs.
    nonisolated(unsafe) static var support: (any URLSessionSupport)?

    /// The sibling executable's name.
    static let siblingName = "courier-urlsession"

    /// The URLSession support, or this process becomes `courier-urlsession` (this call then
    /// does not return). Throws `E_FNF` when the sibling is not installed.
    static func required() throws(CourierError) -> any URLSessionSupport {
        if let support { return support }
        try becomeURLSessionBuild()
    }

    /// `--transport urlsession` or `--hand-off-at` among the options (before a `--`). A
    /// false positive only means the URLSession build runs the command, which it does alike.
    static func asksForURLSession(_ arguments: [String]) -> Bool {
        for (i, argument) in arguments.enumerated() {
            if argument == "--" { return false }
            if argument == "--transport=urlsession" || argument == "--hand-off-at" || argument.hasPrefix("--hand-off-at=") { return true }
            if argument == "--transport", i + 1 < arguments.count, arguments[i + 1] == "urlsession" { return true }
        }
        return false
    }

    /// Where `courier-urlsession` is: beside this executable (symbolic links resolved).
    static func siblingPath() -> String? {
        let me = Bundle.main.executableURL ?? URL(fileURLWithPath: "/proc/self/exe")
        let sibling = me.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(siblingName).path
        return FileManager.default.isExecutableFile(atPath: sibling) ? sibling : nil
    }

    /// Replaces this process with `courier-urlsession` and the same arguments.
    static func becomeURLSessionBuild() throws(CourierError) -> Never {
        guard let path = siblingPath() else {
            throw CourierError(.fileNotFound, "URLSession (--transport urlsession, --hand-off-at, or a hand-off to finish) needs "
                + "\(siblingName) installed next to courier; scripts/install-cli installs both")
        }
        fflush(nil)
        let arguments = [path] + CommandLine.arguments.dropFirst()
        var cArguments = arguments.map { strdup($0) }
        cArguments.append(nil)
        execv(path, cArguments)
        let code = errno
        cArguments.forEach { free($0) }
        throw CourierError(.unexpected, "could not run \(path): \(String(cString: strerror(code)))")
    }
}
