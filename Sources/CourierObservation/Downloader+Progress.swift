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
        // A Progress has no way to report an error: a refused cancel, pause or resume shows as
        // the download's own state, which the progress goes on following.
        let weakProgress = WeakProgress(progress)
        progress.cancellationHandler = { [self] in Task { try? await cancel(id: id) } }   // see above: no error channel
        progress.pausingHandler = { [self] in
            weakProgress.asked(.paused)
            Task { try? await pause(id: id) }   // see above: no error channel
        }
        progress.resumingHandler = { [self] in
            weakProgress.asked(.downloading)
            Task { try? await resume(id: id) }   // see above: no error channel
        }
        let feed = DownloadsFeed(downloader: self, selection: .ids([id]), maxUpdatesPerSecond: maxUpdatesPerSecond)
        feed.start { update in
            guard let progress = weakProgress.value else { return false }
            if update.removed.contains(id) {
                if !progress.isCancelled { progress.cancel() }
                return false
            }
            guard let s = update.all.first else { return true }
            return ProgressMirror.show(s, on: progress, mirror: weakProgress)
        }   // it runs until the download completes or goes, or the progress is released
        return progress
    }
}

/// How a snapshot shows on a `Progress`.
enum ProgressMirror {
    /// Updates `progress`; `false` once nothing more will change (completed). `mirror` keeps
    /// the phase of the update before, so a pause or resume made elsewhere is mirrored when it
    /// happens, never against one the app just asked for through the progress.
    static func show(_ s: DownloadSnapshot, on progress: Progress, mirror: WeakProgress) -> Bool {
        let previous = mirror.swapPhase(s.phase)
        if let total = s.totalBytes, progress.totalUnitCount != total { progress.totalUnitCount = total }
        progress.completedUnitCount = s.phase == .completed ? max(s.bytesReceived, progress.totalUnitCount) : s.bytesReceived
        progress.setUserInfoObject(s.bytesPerSecond > 0 ? NSNumber(value: Int(s.bytesPerSecond)) : nil, forKey: .throughputKey)
        progress.setUserInfoObject(s.secondsRemaining.map { NSNumber(value: $0) }, forKey: .estimatedTimeRemainingKey)
        // A pause or resume made elsewhere; the handlers it calls find the download there already.
        // The app's own pause (or resume) showing late is not one: mirrored, it would undo a
        // resume (or pause) the app asked for since, as a quick pause-then-resume did.
        let wasPaused = previous == .paused
        if s.phase == .paused, !wasPaused, mirror.madeElsewhere(.paused), !progress.isPaused { mirror.mirroring { progress.pause() } }
        if s.isActive, wasPaused, mirror.madeElsewhere(.downloading), progress.isPaused { mirror.mirroring { progress.resume() } }
        return s.phase != .completed
    }
}

/// The progress a feed updates, held weakly (the app owns it), and the phase it last showed.
final class WeakProgress: @unchecked Sendable {   // a weak reference, set once (reading it is thread-safe); the phase is locked
    weak var value: Progress?
    private let phase = Locked<DownloadSnapshot.Phase?>(nil)
    init(_ progress: Progress) { value = progress }
    /// Records `new` and returns the phase before it.
    func swapPhase(_ new: DownloadSnapshot.Phase) -> DownloadSnapshot.Phase? {
        phase.withLock { old in defer { old = new }; return old }
    }

    /// What the app asked through the progress (a pause or a resume) and has not yet seen
    /// show; `mirrored`: the mirror itself is calling pause or resume on the progress now.
    private let askedState = Locked<(asked: DownloadSnapshot.Phase?, mirrored: Bool)>((nil, false))

    /// The app asked for `phase` (unless the mirror is the one calling).
    func asked(_ phase: DownloadSnapshot.Phase) {
        askedState.withLock { if !$0.mirrored { $0.asked = phase } }
    }

    /// Whether a change to `phase` (paused, or running again) was made elsewhere: only when
    /// the app has no ask outstanding. The app's own ask showing uses it up; a change against
    /// it is the state from before the ask, showing late.
    func madeElsewhere(_ phase: DownloadSnapshot.Phase) -> Bool {
        askedState.withLock { state in
            guard let asked = state.asked else { return true }
            if asked == phase { state.asked = nil }
            return false
        }
    }

    /// Runs `body` as the mirror (its pause or resume is no ask of the app's).
    func mirroring(_ body: () -> Void) {
        askedState.withLock { $0.mirrored = true }
        body()
        askedState.withLock { $0.mirrored = false }
    }
}
