import ArgumentParser
import Courier
import Foundation

/// `courier open`: the DOWNLOAD button of seed 002 on one download.
struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Press DOWNLOAD: print the path to open when the download is complete, else (re)start it and say so.")
    @Argument(help: "The download's id.") var id: String
    @Option(name: .long, help: "The URL, for a download with no record yet.") var url: String?
    @Option(name: .shortAndLong, help: "The output path, for a download with no record yet.") var output: String?
    @Option(name: .customLong("media-type"), help: "With --url: the video's media type (Movie, Episode); with --media-id, DOWNLOAD cleans up every earlier task of that video, whatever its id.") var mediaType: String?
    @Option(name: .customLong("media-id"), help: "With --url: the video's id (see --media-type).") var mediaId: String?
    @OptionGroup var store: StoreOptions
    @OptionGroup var engine: EngineOptions

    func run() async throws {
        do {
            let downloader = Downloader(configuration: engine.configuration(), database: try store.open(), transport: try engine.transport(), logger: makeLogger(verbose: false))
            let existing = try await downloader.record(id: id)
            let request: DownloadRequest
            if let url, let output {
                let absolute = URL(fileURLWithPath: output).standardizedFileURL.path
                request = DownloadRequest(id: id, url: url, destination: String(absolute.dropFirst()), mediaId: mediaId, mediaType: mediaType)
            } else if let existing {
                request = DownloadRequest(id: id, url: existing.remoteUrl, destination: existing.localFinalPath, mediaId: existing.mediaId, mediaType: existing.mediaType,
                                          sha256: existing.expectedSHA256, expectedSize: existing.expectedBytes)
            } else {
                await downloader.shutdown()
                throw CourierError(.notFound, "no download with id \(id); give --url and -o to start one")
            }
            switch try await DownloadButton(downloader: downloader).press(request) {
            case let .open(file):
                await downloader.shutdown()
                Terminal.out(file.path)
            case let .inProgress(record):
                await downloader.shutdown()
                Terminal.out("\(id) is \(record.state.rawValue); nothing to do.")
            case let .error(error):
                await downloader.shutdown()
                throw error
            case .downloadStarted:
                Terminal.error("Downloading \(id)…")
                let code = await Foreground(downloader: downloader, quiet: false).watch([id])
                if code != ExitCodes.success { throw ExitCode(code) }
            }
        } catch let error as CourierError {
            throw failure(error)
        }
    }
}
