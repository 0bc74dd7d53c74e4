#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
// Darwin only. On Linux, scripts/darwin-typecheck compiles this file against
// Tests/DarwinStubs (declarations copied from Apple's documentation).
#if COURIER_DARWIN_TYPECHECK
import CourierDocuments
import DarwinStubs
#endif
import Courier
import Foundation

/// The system's iCloud Drive behind ``UbiquityService``: it only passes calls and metadata
/// on; ``ICloudContainer`` decides. The query and its observers live on the main queue
/// (`NSMetadataQuery.start()` must be called there or on its operation queue).
public final class SystemUbiquityService: UbiquityService, @unchecked Sendable { // query and observers: main queue only
    /// The container's `Documents` folder, which iCloud Drive shows the user.
    public let documentsURL: URL
    private var query: NSMetadataQuery?
    private var observers: [any NSObjectProtocol] = []
    private let coordinationQueue = OperationQueue()

    /// The app's ubiquity container (`nil`: the first in its entitlements). Finding it can
    /// block: call this off the main thread (FileManager's documentation says so).
    public init(containerIdentifier: String?) throws {
        guard let container = FileManager.default.url(forUbiquityContainerIdentifier: containerIdentifier) else {
            throw CourierError(.invalidState, "iCloud Drive is not available to this app (signed out, or no ubiquity container)")
        }
        documentsURL = container.appendingPathComponent("Documents", isDirectory: true)
        try FileManager.default.createDirectory(at: documentsURL, withIntermediateDirectories: true)
    }

    /// Starts an `NSMetadataQuery` over the container's documents on the main queue;
    /// `update` gets every item each time the query gathers or updates.
    public func startMonitoring(_ update: @escaping @Sendable ([UbiquityItem]) -> Void) {
        DispatchQueue.main.async {
            guard self.query == nil else { return }
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = NSPredicate(format: "%K LIKE '*'", NSMetadataItemFSNameKey)
            query.operationQueue = .main
            let deliver: @Sendable (Notification) -> Void = { note in
                MainActor.assumeIsolated {   // posted on the main queue, as asked below
                    if let query = note.object as? NSMetadataQuery { update(Self.items(of: query)) }
                }
            }
            for name in [NSNotification.Name.NSMetadataQueryDidFinishGathering, .NSMetadataQueryDidUpdate] {
                self.observers.append(NotificationCenter.default.addObserver(forName: name, object: query, queue: .main, using: deliver))
            }
            _ = query.start()
            self.query = query
        }
    }

    /// Stops the query and its observers (on the main queue).
    public func stopMonitoring() {
        DispatchQueue.main.async {
            self.query?.stop()
            for observer in self.observers { NotificationCenter.default.removeObserver(observer) }
            self.observers = []
            self.query = nil
        }
    }

    /// Asks iCloud to download the item (`startDownloadingUbiquitousItem(at:)`).
    public func startDownloading(_ url: URL) throws {
        try FileManager.default.startDownloadingUbiquitousItem(at: url)
    }

    /// Removes the local copy and keeps it in iCloud (`evictUbiquitousItem(at:)`).
    public func evict(_ url: URL) throws {
        try FileManager.default.evictUbiquitousItem(at: url)
    }

    /// Runs `accessor` under an `NSFileCoordinator` (a replacing write, or a read) on a
    /// queue of its own; returns once it ran, or throws the coordination's error (cancelling
    /// the task cancels the wait).
    public func coordinate(_ url: URL, writing: Bool, accessor: @escaping @Sendable (URL) -> Void) async throws {
        // The intent and coordinator are used on the coordination queue only, after this call.
        nonisolated(unsafe) let intent = writing ? NSFileAccessIntent.writingIntent(with: url, options: .forReplacing)
                                                 : NSFileAccessIntent.readingIntent(with: url, options: [])
        nonisolated(unsafe) let coordinator = NSFileCoordinator(filePresenter: nil)
        // Waiting for access (an evicted file being downloaded, maybe offline) ends when the
        // task is cancelled: cancel() makes the coordination fail with NSUserCancelledError.
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                coordinator.coordinate(with: [intent], queue: coordinationQueue) { error in
                    withExtendedLifetime(coordinator) {}   // alive until access is granted or refused
                    if let error { return continuation.resume(throwing: error) }
                    accessor(intent.url)   // the access lasts until this returns
                    continuation.resume()
                }
            }
        } onCancel: {
            coordinator.cancel()
        }
    }

    /// Every result of the query as plain values; read with updates paused.
    private static func items(of query: NSMetadataQuery) -> [UbiquityItem] {
        query.disableUpdates()
        defer { query.enableUpdates() }
        return (0..<query.resultCount).compactMap { index in
            guard let item = query.result(at: index) as? NSMetadataItem,
                  let url = item.value(forAttribute: NSMetadataItemURLKey) as? URL else { return nil }
            let raw = item.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
            let status: UbiquityDownloadingStatus? = raw == NSMetadataUbiquitousItemDownloadingStatusCurrent ? .current
                : raw == NSMetadataUbiquitousItemDownloadingStatusDownloaded ? .downloaded
                : raw == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded ? .notDownloaded : nil
            return UbiquityItem(path: url.path, downloadingStatus: status,
                                percentDownloaded: item.value(forAttribute: NSMetadataUbiquitousItemPercentDownloadedKey) as? Double,
                                isDownloading: item.value(forAttribute: NSMetadataUbiquitousItemIsDownloadingKey) as? Bool,
                                downloadingError: (item.value(forAttribute: NSMetadataUbiquitousItemDownloadingErrorKey) as? NSError).map { UbiquityError($0) })
        }
    }
}

extension ICloudContainer {
    /// The app's iCloud Drive (`nil`: the first container in its entitlements). Call it off
    /// the main thread: finding the container can block.
    public convenience init(containerIdentifier: String? = nil) throws {
        self.init(service: try SystemUbiquityService(containerIdentifier: containerIdentifier))
    }
}
#endif
