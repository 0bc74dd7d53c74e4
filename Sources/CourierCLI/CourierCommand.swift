import ArgumentParser
import Courier
import Foundation

struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "Resumable, verified downloads: interrupt them, relaunch, and they go on where they stopped.",
        discussion: """
        Downloads are recorded in a database (by default $XDG_DATA_HOME/courier/courier.sqlite, \
        else ~/.local/share/courier/courier.sqlite; --db overrides). Run the same `courier get` \
        again, or `courier resume`, to continue an interrupted download.

        EXIT CODES
        \(ExitCodes.table)
        """,
        version: "0.1.0",
        subcommands: [Get.self, Put.self, List.self, Status.self, Pause.self, Resume.self, Cancel.self, Attachments.self, Doc.self, Media.self, Open.self, Demo.self, Serve.self]
    )

    /// Runs the command; every failure leaves with an `E_` code and its documented exit
    /// status, in this one place (usage errors and `--help` as argument-parser prints them).
    static func main() async {
        if let bad = ArgumentBytes.firstNotUTF8() {
            exit(withError: failure(CourierError(.invalidPath, "argument \(bad.index) (\(bad.shown)) is not UTF-8 text: Courier takes file names and URLs in UTF-8 (rename the file)")))
        }
        do {
            var command = try parseAsRoot()
            // For the README test: every documented command line must parse; nothing runs.
            if ProcessInfo.processInfo.environment["COURIER_PARSE_ONLY"] == "1" { return }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CourierError {
            exit(withError: failure(error))
        } catch let error as CancellationError {
            exit(withError: failure(CourierError(.paused, "interrupted", underlying: error)))
        } catch {
            // argument-parser's own errors (usage, --help, ExitCode) keep their meaning.
            if error is ExitCode || error is ValidationError || error is CleanExit || String(reflecting: type(of: error)).contains("ArgumentParser") {
                exit(withError: error)
            }
            exit(withError: failure(Self.mapped(error)))
        }
    }

    /// An error that is not Courier's, as a code with words: a Foundation file error by the
    /// POSIX error it stands for (a denied folder is E_PERMISSION), anything else E_UNEXPECTED
    /// with its description, never a raw `NSError` dump.
    static func mapped(_ error: any Error) -> CourierError {
        let ns = error as NSError
        if ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain {
            let file = URL(fileURLWithPath: (ns.userInfo[NSFilePathErrorKey] as? String) ?? (ns.userInfo["NSURL"] as? URL)?.path ?? "/")
            return FileErrors.error(error, "use", file, .write)
        }
        return CourierError(.unexpected, Redactor.redact(FileErrors.describe(error)), underlying: error)
    }
}

/// The command line's raw bytes: Swift decodes an argument that is not UTF-8 with
/// replacement characters, so a file named so could only ever be "not found".
enum ArgumentBytes {
    /// The first argument whose bytes are not UTF-8, its index and a printable form (`?` for
    /// each byte that is not printable ASCII).
    static func firstNotUTF8() -> (index: Int, shown: String)? {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
            if String(bytes: bytes, encoding: .utf8) == nil {   // (String(validating:) is macOS 15)
                return (index, String(decoding: bytes.map { $0 < 0x80 && $0 >= 0x20 ? $0 : UInt8(ascii: "?") }, as: UTF8.self))
            }
        }
        return nil
    }
}
