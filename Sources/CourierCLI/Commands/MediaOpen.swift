import ArgumentParser
import Courier
import CourierMedia
import Foundation

extension Media {
    /// `courier media open`: the DOWNLOAD button (seed 002) on a library version.
    struct OpenMedia: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "open", abstract: "Press DOWNLOAD on a version: print the file to play when it is in the library, say so when it is in flight, else clean up what an earlier try left and download it.")
        @OptionGroup var options: MediaOptions
        @Option(name: .long, help: "The Jellyfin server's URL (needed only to download).") var server: String?
        @Option(name: .customLong("version-id"), help: "The version (media source id); default: the item's version in the library or in flight, else the server's first.") var versionId: String?
        @Flag(name: .customLong("resume-stopped"), help: "A paused or failed version resumes from its kept bytes instead of starting over.") var resumeStopped = false
        @Flag(name: .shortAndLong, help: "No progress output.") var quiet = false
        @OptionGroup var stack: TransportOptions
        @Argument(help: "The item id.") var itemId: String

        func run() async throws {
            Interrupts.shared.install()
            try await options.run(server: server, transport: stack.transport()) { library in
                switch try await library.pressDownload(itemId: itemId, versionId: versionId, resumingStopped: resumeStopped) {
                case let .open(file):
                    Terminal.out(file.path)
                case let .inProgress(version):
                    Terminal.out("\(version) is in flight; nothing to do.")
                case let .error(error):
                    throw error
                case let .downloadStarted(version):
                    Terminal.error("Downloading \(version)…")
                    let report = try await MediaCommands.follow(library, version, quiet: quiet)
                    Terminal.out(options.rootURL.appendingPathComponent(report.mediaPath).path)
                }
            }
        }
    }
}
