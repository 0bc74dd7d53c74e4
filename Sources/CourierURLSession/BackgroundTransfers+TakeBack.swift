import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Coming back to the foreground: each task is taken back into the engine or left to
/// finish, keeping what the system fetched (``TakeBackRule``; resume data where the platform
/// gives it).
extension BackgroundTransfers {
    /// The app is in the foreground again: each download's task is taken back into the
    /// engine or left to finish, keeping what the system fetched either way. A task that
    /// has received more than ``finishesInSystemAbove`` of the rest it asked for is left to
    /// finish in the system (its file is adopted when it arrives). Another is cancelled: where the platform gives resume
    /// data (Apple's URLSession), a task resumed from it fetches only the rest, in the
    /// system; where it gives none (Linux, or a task that had not started), the download
    /// goes on in the engine from its kept bytes. A file that arrived first is adopted.
    /// Returns once each of these steps is done; the system and the engine never both
    /// write a download, because a hand-off ends once.
    public func takeBack() async {
        let (tasks, share) = state.withLock { s in
            s.inBackground = false
            s.handOffRetries = [:]
            s.eventsDelivered = false   // a handler given from now on waits for the next delivery
            return (s.tasks, s.finishShare)
        }
        await takeBackUploads(share: share)
        for (id, task) in tasks.sorted(by: { $0.key < $1.key }) where Self.isLive(task) {
            if TakeBackRule.leavesToFinish(received: task.countOfBytesReceived, expectedToReceive: task.countOfBytesExpectedToReceive, share: share) {
                logger.info("left to finish in the system: \(task.countOfBytesReceived) bytes fetched", metadata: ["id": "\(id)"])
                continue
            }
            state.withLock { _ = $0.replacing.insert(id) }
            let resumeData = await Self.cancel(task)
            let mine = state.withLock { s -> Bool in
                s.replacing.remove(id)
                guard s.tasks[id] === task else { return false }
                s.tasks[id] = nil
                return true
            }
            guard mine else { continue }
            if let resumeData, start(id: id, resumed: true, { $0.downloadTask(withResumeData: resumeData) }) {
                logger.info("resumed in the system from its resume data", metadata: ["id": "\(id)"])
                continue
            }
            track(id) { transfers in await transfers.giveBack(id, "taken back") }
        }
        // A task that had ended before this looked: its end reaches the delegate, which
        // adopts or gives back; one whose end never comes (it ended before it was known
        // here) is given back after a second.
        let deadline = ContinuousClock.now + .seconds(1)
        while true {
            let ended = state.withLock { $0.tasks.filter { !Self.isLive($0.value) } }
            if ended.isEmpty { break }
            if ContinuousClock.now >= deadline {
                for (id, task) in ended {
                    let mine = state.withLock { s -> Bool in
                        guard s.tasks[id] === task else { return false }
                        s.tasks[id] = nil
                        return true
                    }
                    if mine { track(id) { transfers in await transfers.giveBack(id, "taken back") } }
                }
                break
            }
            try? await Task.sleep(for: .milliseconds(20))   // not cancelled but by the caller's own cancellation, which ends the wait
        }
        for adoption in state.withLock({ Array($0.adopting.values) }) { await adoption.value }
    }

    /// Cancels `task` and returns its resume data, if the platform gives any. Apple calls
    /// the handler once the task is cancelled; should it never come, the task counts as
    /// giving none after 5 s.
    static func cancel(_ task: URLSessionDownloadTask) async -> Data? {
        let once = Locked<CheckedContinuation<Data?, Never>?>(nil)
        return await withCheckedContinuation { done in
            once.withLock { $0 = done }
            task.cancel(byProducingResumeData: { data in once.withLock { $0.take() }?.resume(returning: data) })
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { once.withLock { $0.take() }?.resume(returning: nil) }
        }
    }

    /// The share (0…1) of the rest a task asked for past which ``takeBack()`` leaves it to
    /// finish in the system rather than cancel it; 0.5 by default. Where the platform gives
    /// resume data, a task below it is resumed from that data, so nothing is fetched twice
    /// either way; where it gives none (Linux), at most this share of what was handed off is
    /// fetched again after a take-back.
    public var finishesInSystemAbove: Double {
        get { state.withLock { $0.finishShare } }
        set { state.withLock { $0.finishShare = min(1, max(0, newValue)) } }
    }
}
