#if canImport(Darwin) && !os(Linux)
import Courier
import Foundation

/// iCloud Drive as a ``DocumentContainer`` (Apple platforms only): downloads with
/// `startDownloadingUbiquitousItem`, reads status and percent from an `NSMetadataQuery`
/// (advisory), and reads and writes through `NSFileCoordinator`, as seed 004 says.
/// Not built or tested on Linux.
public final class ICloudContainer: DocumentContainer, @unchecked Sendable { // state guarded by `lock`
    /// The ubiquity container's Documents folder.
    public let root: URL
    private let lock = NSLock()
    private var percents: [String: Double] = [:]
    private var statuses: [String: DocumentDownloadStatus] = [:]
    private var query: NSMetadataQuery?

    /// Uses the app's ubiquity container (`nil`: the default one).
    public init(containerIdentifier: String? = nil) throws {
        guard let container = FileManager.default.url(forUbiquityContainerIdentifier: containerIdentifier) else {
            throw CourierError(.fileNotFound, "iCloud is not available for this app")
        }
        root = container.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        DispatchQueue.main.async { self.startQuery() }
    }

    private func startQuery() {
        let q = NSMetadataQuery()
        q.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
        q.predicate = NSPredicate(format: "%K LIKE '*'", NSMetadataItemFSNameKey)
        // The query comes from the notification: capturing it would send a non-Sendable value.
        for name in [Notification.Name.NSMetadataQueryDidUpdate, .NSMetadataQueryDidFinishGathering] {
            NotificationCenter.default.addObserver(forName: name, object: q, queue: .main) { [weak self] note in
                guard let query = note.object as? NSMetadataQuery else { return }
                MainActor.assumeIsolated { self?.refresh(query) }
            }
        }
        q.start()
        query = q
    }

    private func refresh(_ q: NSMetadataQuery) {
        q.disableUpdates()
        defer { q.enableUpdates() }
        for case let item as NSMetadataItem in q.results {
            guard let url = item.value(forAttribute: NSMetadataItemURLKey) as? URL else { continue }
            let path = String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))
            let percent = item.value(forAttribute: NSMetadataUbiquitousItemPercentDownloadedKey) as? Double
            let status = item.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
            let error = item.value(forAttribute: NSMetadataUbiquitousItemDownloadingErrorKey) as? NSError
            lock.lock()
            if let percent { percents[path] = percent }
            if let error {
                statuses[path] = .failed(CourierError(.network, error.localizedDescription, underlying: error))
            } else if status == NSMetadataUbiquitousItemDownloadingStatusCurrent {
                statuses[path] = .current
            } else if status == NSMetadataUbiquitousItemDownloadingStatusDownloaded || status == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded {
                statuses[path] = percent.map { $0 > 0 } == true ? .downloading : .notDownloaded
            }
            lock.unlock()
        }
    }

    public func entryExists(_ path: String) -> Bool {
        let url = root.appendingPathComponent(path)
        let placeholder = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).icloud")
        return FileManager.default.fileExists(atPath: url.path) || FileManager.default.fileExists(atPath: placeholder.path)
    }

    public func startDownloading(_ path: String, restart: Bool) async throws {
        try FileManager.default.startDownloadingUbiquitousItem(at: root.appendingPathComponent(path))
    }

    public func state(of path: String) async -> DocumentState {
        lock.lock()
        defer { lock.unlock() }
        return DocumentState(status: statuses[path], percent: percents[path])
    }

    public func coordinatedRead(_ path: String) async throws -> Data {
        try coordinate(path, writing: false) { url in
            do { return try Data(contentsOf: url) } catch { throw Self.map(error, path) }
        }
    }

    public func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws {
        let data = try await coordinatedRead(path)
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + chunkSize)
            try await body(data.subdata(in: offset..<end))
            offset = end
        }
    }

    public func coordinatedWrite(_ path: String, data: Data) async throws {
        try coordinate(path, writing: true) { url in
            do { try data.write(to: url, options: .atomic) } catch { throw Self.map(error, path) }
        }
    }

    private func coordinate<T>(_ path: String, writing: Bool, _ body: (URL) throws -> T) throws -> T {
        var coordinationError: NSError?
        var result: Result<T, any Error>?
        let coordinator = NSFileCoordinator()
        let url = root.appendingPathComponent(path)
        if writing {
            coordinator.coordinate(writingItemAt: url, options: .forReplacing, error: &coordinationError) { result = Result { try body($0) } }
        } else {
            coordinator.coordinate(readingItemAt: url, options: [], error: &coordinationError) { result = Result { try body($0) } }
        }
        if let coordinationError { throw Self.map(coordinationError, path) }
        return try result!.get()
    }

    /// Seed 004's mapping of Cocoa's file-not-found errors.
    static func map(_ error: any Error, _ path: String) -> any Error {
        let ns = error as NSError
        guard ns.domain == NSCocoaErrorDomain else { return error }
        switch ns.code {
        case NSFileNoSuchFileError: return CourierError(.fileNotFound, "\(path) does not exist", underlying: error)
        case NSFileReadNoSuchFileError: return CourierError(.fileRead, "\(path) vanished while being read", underlying: error)
        case NSFileWriteNoSuchFileError: return CourierError(.fileWrite, "the folder of \(path) does not exist", underlying: error)
        default: return error
        }
    }
}
#endif
