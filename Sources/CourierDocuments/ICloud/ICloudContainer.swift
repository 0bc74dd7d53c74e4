import Courier
import Foundation

/// iCloud Drive as a ``DocumentContainer``, by seed 004's rules: downloads are started with
/// `startDownloadingUbiquitousItem`, status and percent come from the metadata index
/// (advisory), reads and writes are coordinated, and Cocoa's file-not-found errors get
/// their codes (``CocoaFileErrors``).
///
/// Every decision is here and portable; the calls only Apple platforms can make go through
/// a ``UbiquityService``. On Apple platforms `ICloudContainer(containerIdentifier:)` uses
/// the system's; tests drive it with a scripted one. The metadata watch ends when the
/// container goes away.
public final class ICloudContainer: DocumentContainer {
    /// The ubiquity container's `Documents` folder.
    public let root: URL
    let service: any UbiquityService
    private let items = Locked<[String: UbiquityItem]>([:])

    /// A container over `service`; starts watching its metadata.
    public init(service: any UbiquityService) {
        self.service = service
        root = service.documentsURL.standardizedFileURL
        let rootPath = root.path
        // Weakly: the service keeps this closure until `stopMonitoring`, which deinit calls.
        service.startMonitoring { [weak self] snapshot in
            var byPath: [String: UbiquityItem] = [:]
            for item in snapshot {
                if let relative = ICloudStatus.relativePath(item.path, root: rootPath) { byPath[relative] = item }
            }
            self?.items.withLock { $0 = byPath }
        }
    }

    deinit { service.stopMonitoring() }

    func url(_ path: String) throws -> URL { root.appendingPathComponent(try SafePath.validateRelative(path)) }

    /// A direct file-system check: the file, or iCloud's placeholder (`.name.icloud`).
    public func entryExists(_ path: String) -> Bool {
        guard let url = try? url(path) else { return false }   // an invalid path exists nowhere
        let placeholder = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).icloud")
        return FileManager.default.fileExists(atPath: url.path) || FileManager.default.fileExists(atPath: placeholder.path)
    }

    /// Asks iCloud to download the item (again, with `restart`: there is no other way to
    /// nudge a stalled transfer).
    public func startDownloading(_ path: String, restart: Bool) async throws {
        let target = try url(path)
        do { try service.startDownloading(target) } catch { throw CocoaFileErrors.map(error, during: .other, path: path) }
    }

    /// Removes the local copy; the item stays in iCloud and downloads again when read.
    public func evict(_ path: String) async throws {
        let target = try url(path)
        do { try service.evict(target) } catch { throw CocoaFileErrors.map(error, during: .other, path: path) }
    }

    /// The status and percent the metadata index last reported (unknown until it has).
    public func state(of path: String) async -> DocumentState {
        ICloudStatus.state(of: items.withLock { $0[path] })
    }

    /// The whole file, read under coordination.
    public func coordinatedRead(_ path: String) async throws -> Data {
        try await coordinated(path, writing: false) { url in try Data(contentsOf: url) }
    }

    /// The file in chunks under coordination: never more than one chunk in memory.
    public func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws {
        try await withoutActuallyEscaping(body) { body in
            // The coordinated access outlives no call: it ends before this function returns.
            let chunkBody = body
            try await coordinated(path, writing: false) { url in
                let handle = try FileHandle(forReadingFrom: url)
                defer { try? handle.close() }   // a read-only handle, or one already flushed: closing loses nothing
                while let chunk = try handle.read(upToCount: max(1, chunkSize)), !chunk.isEmpty {
                    try Task.checkCancellation()
                    try await chunkBody(chunk)
                }
            }
        }
    }

    /// Replaces the file atomically under coordination; iCloud uploads it.
    public func coordinatedWrite(_ path: String, data: Data) async throws {
        try await coordinated(path, writing: true) { url in try data.write(to: url, options: .atomic) }
    }

    /// Runs `body` inside the service's coordinated access. The service calls its accessor
    /// on a thread of its own and ends the access when the accessor returns, so the accessor
    /// waits there (never on a Swift concurrency thread) for the async body.
    private func coordinated<T: Sendable>(_ path: String, writing: Bool, _ body: @escaping @Sendable (URL) async throws -> T) async throws -> T {
        let target = try url(path)
        let operation: CocoaFileErrors.Operation = writing ? .write : .read
        let outcome = Locked<Result<T, any Error>?>(nil)
        let caller = Locked<Task<Void, Never>?>(nil)
        do {
            try await withTaskCancellationHandler {
                try await service.coordinate(target, writing: writing) { granted in
                    let done = DispatchSemaphore(value: 0)
                    let work = Task {
                        let result: Result<T, any Error>
                        do { result = .success(try await body(granted)) } catch { result = .failure(error) }
                        outcome.withLock { $0 = result }
                        done.signal()
                    }
                    caller.withLock { $0 = work }
                    done.wait()
                }
            } onCancel: {
                caller.withLock { $0 }?.cancel()
            }
        } catch {
            throw CocoaFileErrors.map(error, during: operation, path: path)
        }
        guard let result = outcome.withLock({ $0 }) else {
            throw CourierError(.invalidState, "the coordinated access to \(path) ended without running")
        }
        do { return try result.get() } catch { throw CocoaFileErrors.map(error, during: operation, path: path) }
    }
}
