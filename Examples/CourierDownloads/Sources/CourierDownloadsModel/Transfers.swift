import Courier
import CourierObservation
import CourierURLSession   // AppLifecycle (what `import Courier` brings on Apple platforms; named for Linux)
import Foundation
import GRDB

/// A file the app offers (the catalog would come from the app's server).
public struct CatalogEntry: Identifiable, Sendable, Hashable {
    public let id: String          // the download's id: "catalog:<name>"
    public let title: String
    public let url: String
    public let sha256: String?
    public var destination: String { "Catalog/" + id.dropFirst("catalog:".count) }

    public init(name: String, title: String, url: String, sha256: String? = nil) {
        self.id = "catalog:" + name
        self.title = title
        self.url = url
        self.sha256 = sha256
    }
}

/// Everything the example app's screens use, portable (tested on Linux by
/// `ExampleModelTests`): one database shared by the app and Courier, one downloader, the
/// lifecycle, the observable list, and the DOWNLOAD button's rules.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
public final class Transfers {
    public let downloader: Downloader
    public let lifecycle: AppLifecycle
    public let list: DownloadList
    public let catalog: [CatalogEntry]
    private let appDatabase: DatabaseQueue
    private let button: DownloadButton

    /// - Parameters:
    ///   - folder: Application Support (the database and the downloads live there).
    ///   - backgroundSessionIdentifier: the app's background session (`nil`: none).
    public init(folder: URL, catalog: [CatalogEntry], backgroundSessionIdentifier: String?) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        appDatabase = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path)
        try appDatabase.write { db in
            // The app's own table: which file each catalog entry has on disk.
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS catalogFile (id TEXT PRIMARY KEY, localPath TEXT NOT NULL)")
        }
        let downloader = Downloader(configuration: DownloaderConfiguration(rootDirectory: folder.appendingPathComponent("Downloads")),
                                    database: try CourierDatabase(writer: appDatabase))
        // The app's row is written in the write that completes the download: both or neither.
        try downloader.onCompletion(ofIDsWithPrefix: "catalog:") { db, record in
            try db.execute(sql: "INSERT OR REPLACE INTO catalogFile (id, localPath) VALUES (?, ?)", arguments: [record.id, record.localFinalPath])
        }
        self.downloader = downloader
        lifecycle = backgroundSessionIdentifier.map { AppLifecycle(downloader: downloader, backgroundSessionIdentifier: $0) }
            ?? AppLifecycle(downloader: downloader, background: nil)
        list = DownloadList(downloader: downloader)   // the stored bars at once
        button = DownloadButton(downloader: downloader)
        self.catalog = catalog
    }

    /// At every launch: what the system fetched is adopted, then what was pending resumes.
    public func launch() async throws { try await lifecycle.launch() }

    /// What DOWNLOAD did, as the row says it.
    public enum Pressed: Equatable, Sendable {
        case opened(URL)          // rule 1: the file is there and opens
        case started              // rules 2, 5, 6 (7 cleans up first)
        case alreadyRunning       // rule 4
        case failed(String)       // rule 3, or the press itself failed
    }

    /// DOWNLOAD pressed on `entry`: the seed's seven rules (`DownloadButton`).
    public func press(_ entry: CatalogEntry) async -> Pressed {
        let request = DownloadRequest(id: entry.id, url: entry.url, destination: entry.destination, sha256: entry.sha256)
        do {
            switch try await button.press(request) {
            case let .open(file): return .opened(file)
            case .downloadStarted: return .started
            case .inProgress: return .alreadyRunning
            case let .error(error): return .failed("\(error.code.rawValue): \(error.message)")
            }
        } catch let error as CourierError {
            return .failed("\(error.code.rawValue): \(error.message)")
        } catch {
            return .failed("\(error)")
        }
    }

    /// The app's own row for `entry`: where its file is, once Courier completed it.
    public func localPath(of entry: CatalogEntry) throws -> String? {
        try appDatabase.read { db in try String.fetchOne(db, sql: "SELECT localPath FROM catalogFile WHERE id = ?", arguments: [entry.id]) }
    }

    /// What the row shows under the title.
    public func detail(of item: DownloadItem?) -> String {
        guard let item else { return "Not downloaded" }
        switch item.phase {
        case .queued: return "Waiting"
        case .downloading:
            let percent = Int((item.fractionCompleted ?? 0) * 100)
            let speed = ByteCountFormatter.string(fromByteCount: Int64(item.bytesPerSecond), countStyle: .file)
            let left = item.secondsRemaining.map { " · \(Int($0)) s left" } ?? ""
            return "\(percent) % · \(speed)/s\(left)"
        case let .retrying(attempt, limit): return "Retrying (\(attempt) of \(limit))"
        case .handedOff: return "Downloading in the background"
        case .runningElsewhere: return "Downloading in another process"
        case .paused: return "Paused"
        case .completed: return "Downloaded"
        case .failed: return item.error.map { "\($0.code.rawValue): \($0.message)" } ?? "Failed"
        case .cancelled: return "Cancelled"
        }
    }
}
