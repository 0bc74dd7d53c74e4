import CourierAttachments
import Foundation

/// Upload progress drawn like `get`'s: one renderer per file, fed from the upload tasks.
final class UploadBars: @unchecked Sendable { // every access goes through `lock`
    private let lock = NSLock()
    private var renderers: [String: ProgressRenderer] = [:]
    private var finished: Set<String> = []

    /// Shows `progress` for `name` (at most ten times a second on a terminal, a line every
    /// few seconds when piped, and always the last one).
    func show(_ name: String, _ progress: UploadProgress) {
        lock.withLock {
            var renderer = renderers[name] ?? ProgressRenderer(label: name)
            let done = progress.confirmedBytes >= progress.totalBytes
            if done, finished.contains(name) { return }
            renderer.show(progress.asTransferProgress, force: done)
            if done {
                finished.insert(name)
                renderer.finish()
            }
            renderers[name] = renderer
        }
    }

    /// Ends the bars' lines.
    func finish() {
        lock.withLock {
            for key in renderers.keys { renderers[key]?.finish() }
        }
    }
}
