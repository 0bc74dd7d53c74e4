import Courier
import Foundation

/// How ``Documents`` waits for downloads.
public struct DocumentsOptions: Sendable {
    /// With no progress for this long (no status change, no byte received, no movement of
    /// the percent), the download is triggered again. A long, healthy transfer is never idle.
    /// The percent alone is never trusted to say "done".
    public var idleTimeout: Duration = .seconds(30)
    /// Triggers after the first, before `CourierError/Code/timeout`.
    public var maxRetriggers: Int = 2
    /// How often the status is looked at.
    public var pollInterval: Duration = .milliseconds(50)

    /// The defaults.
    public init() {}
}

/// Seed 004's document operations: open/read is the truth, progress is advisory.
public struct Documents: Sendable {
    /// The container.
    public let container: any DocumentContainer
    /// The waiting rules.
    public let options: DocumentsOptions

    /// Makes the front over a container.
    public init(container: any DocumentContainer, options: DocumentsOptions = DocumentsOptions()) {
        self.container = container
        self.options = options
    }

    /// A direct filesystem check; a placeholder counts as existing.
    public func documentExists(_ path: String) -> Bool { container.entryExists(path) }

    /// The document as UTF-8 text. Invalid UTF-8 is `CourierError/Code/invalidEncoding`,
    /// never a lossy string; use ``readInPlaceBytes(_:)`` for binary formats.
    public func readInPlace(_ path: String) async throws -> String {
        let data = try await readInPlaceBytes(path)
        guard let text = String(data: data, encoding: .utf8) else {   // nil on invalid UTF-8, never lossy
            throw CourierError(.invalidEncoding, "\(path) is not valid UTF-8; read it as bytes")
        }
        return text
    }

    /// The document's bytes: downloads it when needed, then a coordinated read decides.
    public func readInPlaceBytes(_ path: String) async throws -> Data {
        try await ensureCurrent(path)
        return try await container.coordinatedRead(path)
    }

    /// The document's bytes in chunks, for large files.
    public func readInPlaceStream(_ path: String, chunkSize: Int = 1 << 20) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await ensureCurrent(path)
                    try await container.coordinatedRead(path, chunkSize: chunkSize) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Replaces the document atomically (coordinated) and queues its upload. A missing
    /// folder is `E_FNF_WRITE`.
    public func writeInPlace(_ path: String, data: Data) async throws {
        try await container.coordinatedWrite(path, data: data)
    }

    /// The percent downloaded, as it changes. Ends when the transfer completes, throws when
    /// it fails, and stays open while the status is unknown: an empty answer proves nothing.
    public func downloadProgress(_ path: String) -> AsyncThrowingStream<Double, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var last: Double?
                while !Task.isCancelled {
                    let state = await container.state(of: path)
                    if let percent = state.percent, percent != last {
                        continuation.yield(percent)
                        last = percent
                    }
                    switch state.status {
                    case .current:
                        if last != 100 { continuation.yield(100) }
                        continuation.finish()
                        return
                    case let .failed(error):
                        continuation.finish(throwing: Self.readError(error, path))
                        return
                    default:
                        try? await Task.sleep(for: options.pollInterval)   // a cancelled sleep ends early; the loop checks cancellation next
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Refreshes a present document whose remote changed (``DocumentContainer/refresh(_:)``),
    /// triggers the download when needed and waits for *current*, watching for progress
    /// under the idle watchdog and re-triggering a bounded number of times. An unknown
    /// status with nothing on disk returns at once: the open then says `E_FNF`; an unknown
    /// status with an entry on disk triggers at once.
    func ensureCurrent(_ path: String) async throws {
        var triggers = 0
        var lastStatus: DocumentDownloadStatus?? = .none
        var lastPercent: Double?
        var lastBytes: Int64?
        await container.refresh(path)
        try await container.discover(path)
        // Idle time is what the watchdog saw pass between its own looks, each look counting
        // for at most `maxStep`: a process that got no CPU (a loaded machine) or was
        // suspended (an app in the background) cannot tell whether the transfer was idle
        // meanwhile, so that gap never times a healthy transfer out.
        var idle: Duration = .zero
        var lastLook = ContinuousClock.now
        let maxStep = max(options.pollInterval * 4, .milliseconds(250))
        while true {
            try Task.checkCancellation()
            let state = await container.state(of: path)
            let now = ContinuousClock.now
            idle += min(now - lastLook, maxStep)
            lastLook = now
            // Progress is a status change, a byte received or a percent that moved: a long,
            // healthy transfer (status "downloading" throughout) is never idle. A percent
            // that stands still proves nothing, and one that jumps from 0 to 100 is a change
            // like any other.
            if lastStatus == nil || lastStatus! != state.status || (state.percent != nil && state.percent != lastPercent)
                || (state.bytesReceived != nil && state.bytesReceived != lastBytes) {
                lastStatus = .some(state.status)
                lastPercent = state.percent ?? lastPercent
                lastBytes = state.bytesReceived ?? lastBytes
                idle = .zero
            }
            switch state.status {
            case .current:
                return
            case let .failed(error):
                throw Self.readError(error, path)
            case .none:
                if !container.entryExists(path) { return }
                // Unknown yet (the metadata index has not gathered): trigger now rather than
                // wait a whole idle window; starting a current item's download is harmless.
                if triggers == 0 {
                    try await container.startDownloading(path, restart: false)
                    triggers = 1
                    idle = .zero
                    lastLook = .now
                }
            case .notDownloaded where triggers == 0:
                try await container.startDownloading(path, restart: false)
                triggers = 1
                idle = .zero
                lastLook = .now
            case .notDownloaded, .downloading:
                break
            }
            if idle >= options.idleTimeout {
                guard triggers <= options.maxRetriggers else {
                    throw CourierError(.timeout, "\(path) made no progress in \(options.idleTimeout) after \(triggers) trigger(s)")
                }
                try await container.startDownloading(path, restart: true)
                triggers += 1
                idle = .zero
                lastLook = .now
            }
            try await Task.sleep(for: options.pollInterval)
        }
    }

    /// A remote "not found" during the read is `E_FNF_READ`; other failures keep their code.
    static func readError(_ error: CourierError, _ path: String) -> CourierError {
        if error.code == .remoteNotFound || error.httpStatus == 404 || error.httpStatus == 410 {
            return CourierError(.fileRead, "\(path) is gone from the remote (\(error.code.rawValue): \(error.message))")
        }
        return error
    }
}
