import ArgumentParser
import Foundation

@main
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
        subcommands: [Get.self, List.self, Status.self, Pause.self, Resume.self, Cancel.self, Attachments.self, Doc.self, Media.self, Open.self, Demo.self, Serve.self]
    )
}
