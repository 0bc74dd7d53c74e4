import Courier
import CourierCLI
@_spi(Testing) import CourierURLSession
import Foundation
import Logging

/// The URLSession transport and hand-off session for the command line.
struct URLSessionCLI: URLSessionSupport {
    func transport() -> any HTTPTransport { URLSessionTransport() }

    func handOffSession(_ downloader: Downloader, stashDirectory: URL, logger: Logger) -> any HandOffSession {
        BackgroundTransfers(downloader: downloader, stashDirectory: stashDirectory, logger: logger)
    }
}

extension BackgroundTransfers: HandOffSession {}
