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
            exit(withError: failure(CourierError(.unexpected, Redactor.redact(String(describing: error)), underlying: error)))
        }
    }
}
