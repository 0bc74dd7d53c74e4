import CourierCore
import Foundation

extension Downloader {
    /// A `Foundation.Progress` that follows download `id`: what `ProgressView(_:)`,
    /// `NSProgress`-based UI and a parent `Progress` take. Its unit is the byte
    /// (`totalUnitCount` is -1 until the size is known), its kind is a file download, and it
    /// carries throughput and time left. It is cancellable and pausable: `cancel()`,
    /// `pause()` and `resume()` on it cancel, pause and resume the download, and a pause or
    /// resume made elsewhere shows on it. It follows the download until it completes or is
    /// cancelled, or until the progress is released.
    public nonisolated func progress(for id: String, maxUpdatesPerSecond: Double = 10) -> Progress {
        let progress = Progress(totalUnitCount: -1)
        progress.kind = .file
        progress.setUserInfoObject(Progress.FileOperationKind.downloading, forKey: .fileOperationKindKey)
        progress.isCancellable = true
        progress.isPausable = true
        progress.cancellationHandler = { [self] in Task { try? await cancel(id: id) } }
        progress.pausingHandler = { [self] in Task { try? await pause(id: id) } }
        progress.resumingHandler = { [self] in Task { try? await resume(id: id) } }
        let weakProgress = WeakProgress(progress)
        let feed = DownloadsFeed(downloader: self, selection: .ids([id]), maxUpdatesPerSecond: maxUpdatesPerSecond)
        feed.start { update in
            guard let progress = weakProgress.value else { return false }
            if update.removed.contains(id) {
                if !progress.isCancelled { progress.cancel() }
                return false
            }
            guard let s = update.all.first else { return true }
            return ProgressMirror.show(s, on: progress)
        }   // it runs until the download completes or goes, or the progress is released
        return progress
    }
}

/// How a snapshot shows on a `Progress`.
enum ProgressMirror {
    /// Updates `progress`; `false` once nothing more will change (completed).
    static func show(_ s: DownloadSnapshot, on progress: Progress) -> Bool {
        if let total = s.totalBytes, progress.totalUnitCount != total { progress.totalUnitCount = total }
        progress.completedUnitCount = s.phase == .completed ? max(s.bytesReceived, progress.totalUnitCount) : s.bytesReceived
        progress.setUserInfoObject(s.bytesPerSecond > 0 ? NSNumber(value: Int(s.bytesPerSecond)) : nil, forKey: .throughputKey)
        progress.setUserInfoObject(s.secondsRemaining.map { NSNumber(value: $0) }, forKey: .estimatedTimeRemainingKey)
        // A pause or resume made elsewhere; the handlers it calls find the download there already.
        if s.phase == .paused, !progress.isPaused { progress.pause() }
        if s.isActive, progress.isPaused { progress.resume() }
        return s.phase != .completed
    }
}

/// The progress a feed updates, held weakly: the app owns it.
final class WeakProgress: @unchecked Sendable {   // a weak reference, set once; reading it is thread-safe
    weak var value: Progress?
    init(_ progress: Progress) { value = progress }
}
