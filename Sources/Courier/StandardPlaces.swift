import CourierCore
import Foundation
import Logging

/// Where a downloader keeps its records and its files when the app names no place: the
/// platform's usual folders.
///
/// | | records (`courier.sqlite`) | files (the root) |
/// | --- | --- | --- |
/// | Apple platforms | Application Support/Courier | Documents |
/// | Linux | `$XDG_DATA_HOME/courier` (default `~/.local/share/courier`) | `$XDG_DOWNLOAD_DIR` (default `~/Downloads`) |
public struct StandardPlaces: Sendable, Equatable {
    /// The database file.
    public var database: URL
    /// The root directory: a request's `destination` is relative to it.
    public var root: URL

    /// The platform's places, from `environment` on Linux (the process's by default).
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> StandardPlaces {
        let paths = PlatformPlaces.paths(environment: environment)
        return StandardPlaces(database: paths.database, root: paths.root)
    }
}

extension Downloader {
    /// A downloader in the platform's usual places (``StandardPlaces``), over the
    /// platform's default transport, started: downloads a previous run left are resumed.
    /// The folders are made when missing. For anything else (a root of the app's, the app's
    /// own GRDB database, limits, credentials), ``init(configuration:database:urlRefresher:requestAuthorizer:logger:)``.
    /// - Parameters:
    ///   - configure: changes to the configuration (its root is the standard one).
    ///   - logger: where the engine logs; secrets are redacted.
    public static func standard(_ configure: (inout DownloaderConfiguration) -> Void = { _ in },
                                logger: Logger = Logger(label: "courier")) async throws -> Downloader {
        let places = StandardPlaces.current()
        for folder in [places.database.deletingLastPathComponent(), places.root] {
            do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                throw CourierError(.fileWrite, "cannot make the folder \(folder.path)", underlying: error)
            }
        }
        var configuration = DownloaderConfiguration(rootDirectory: places.root)
        configure(&configuration)
        let downloader = Downloader(configuration: configuration, database: try CourierDatabase(path: places.database.path), logger: logger)
        try await downloader.start()
        return downloader
    }
}
