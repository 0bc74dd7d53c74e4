import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's delegate: a task's file is kept before the call returns (the system
/// deletes it after), then adopted; a task that ends without a file gives its download back
/// to the engine. Signatures as Apple declares them (developer.apple.com:
/// URLSessionDownloadDelegate, URLSessionTaskDelegate, URLSessionDelegate), with the
/// completion handlers `@Sendable`.
extension BackgroundTransfers: URLSessionDownloadDelegate {
    /// The most times a download whose task failed is handed off again while the app
    /// stays in the background (each time from the bytes it keeps).
    static let handOffRetries = 3

    /// A handed-off download's body arrived: it is moved out of the system's temporary place
    /// at once (the system deletes it when this returns) and judged by the engine's rules.
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        guard let id = downloadTask.taskDescription, let http = downloadTask.response as? HTTPURLResponse else { return }
        var headers: [(String, String)] = []
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.append((name, value)) }
        }
        let started = ContinuousClock.now
        do {
            let resumed = state.withLock { $0.resumed.contains(id) }
            try stash.keep(id, location: location, status: http.statusCode, headers: headers, resumed: resumed)
            state.withLock { $0.lastKeepDuration = ContinuousClock.now - started }
        } catch {
            logger.warning("the system's file could not be kept; the download goes on from its kept bytes: \(error)", metadata: ["id": "\(id)"])
            return
        }
        let adopts = state.withLock { s -> Bool in
            s.arrived.insert(id)
            return s.actsOnEvents
        }
        guard adopts else { return }
        track(id) { transfers in await transfers.adopt(id) }
    }

    /// The system's progress reaches the engine's events and the stored record.
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                           totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        guard let id = downloadTask.taskDescription, let progress = state.withLock({ $0.tasks[id] === downloadTask ? $0.progress[id] : nil }) else { return }
        progress.note(written: totalBytesWritten, expected: totalBytesExpectedToWrite > 0 ? totalBytesExpectedToWrite : nil)
    }

    /// A handed-off task ended: a failure keeps its resume data and is handed off again or
    /// waits for the app; an upload piece's reply is judged by `UploadPieceReply`.
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let id = task.taskDescription else { return }
        if id.hasPrefix(UploadHandOffPiece.taskPrefix) { return uploadTaskEnded(task, taskID: id) }
        let resumeData = error.flatMap(Self.resumeData(in:))
        let (current, arrived, retry, acts) = state.withLock { s -> (Bool, Bool, Bool, Bool) in
            // Only the download's current task speaks for it (an older one was replaced; one
            // that takeBack() cancels is its to end).
            guard s.tasks[id] === task, !s.replacing.contains(id) else { return (false, false, false, false) }
            s.tasks[id] = nil
            let arrived = s.arrived.remove(id) != nil
            var retry = false
            if !arrived, s.inBackground {
                let count = s.handOffRetries[id, default: 0]
                retry = count < Self.handOffRetries
                s.handOffRetries[id] = count + 1
            }
            return (true, arrived, retry, s.actsOnEvents)
        }
        if current, !arrived, acts, retry, let resumeData, start(id: id, resumed: true, { $0.downloadTask(withResumeData: resumeData) }) {
            // Failed with resume data (Apple's URLSession, the app away): a task resumed from
            // it fetches only the rest; its file is judged as the resumed reply says
            // (`Downloader.adoptHandOff`). Made while the app is in the background, the system
            // starts it at its discretion (Apple: `isDiscretionary` is then treated as true).
            logger.info("the system's task failed; resumed from its resume data", metadata: ["id": "\(id)"])
            return
        }
        if current, !arrived, acts {
            // No file: failed or cancelled by the system. The engine goes on from the kept
            // bytes; while the app is away, a fresh task asks for the rest again.
            let reason = error.map { "the system's task failed: \($0.localizedDescription)" } ?? "the system's task ended without a file"
            track(id) { transfers in
                transfers.stash.discard(id)
                await transfers.giveBack(id, reason)
                if retry, transfers.state.withLock({ $0.inBackground }) {   // not if the app came back meanwhile
                    do { try await transfers.handOff(id: id) } catch {
                        transfers.logger.warning("handing off again failed; the download stays with the engine: \(error)", metadata: ["id": "\(id)"])
                    }
                }
            }
        }
    }

    /// Redirects come back to the engine (as the task's reply, which gives the download back):
    /// it follows them under its own rules, with credentials only to the same origin. (A
    /// background session follows redirects itself without asking; see the article
    /// "Background transfers and the two HTTP stacks".)
    public func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                           newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    /// Every event of a relaunch is delivered: the system's handler is called on the main
    /// queue, as Apple asks, at once (each arrived file was kept before its event returned;
    /// adoption goes on after); if the app has not given the handler yet, it is called as
    /// soon as it does.
    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        let handler = state.withLock { s -> MainThreadHandler? in
            guard let handler = s.eventsHandler else { s.eventsDelivered = true; return nil }
            s.eventsHandler = nil
            return handler
        }
        if let handler { finishSystemEvents(handler) }
    }

    /// Runs `work` for download `id` after the steps already queued for it, so one
    /// download's steps never overlap and ``takeBack()`` can wait for them.
    @discardableResult
    func track(_ id: String, _ work: @escaping @Sendable (BackgroundTransfers) async -> Void) -> Task<Void, Never> {
        state.withLock { s in
            let previous = s.adopting[id]
            let step = Task {
                await previous?.value
                await work(self)
            }
            s.adopting[id] = step
            return step
        }
    }
}
