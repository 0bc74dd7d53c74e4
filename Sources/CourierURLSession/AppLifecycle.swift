import CourierCore
import Foundation

/// The one place an app tells Courier about its life: launch, scene phases and the system's
/// background events. Make it once per process, after the features that share the
/// downloader (an attachment queue, a media library, a documents mirror), so the downloads
/// they left get their credentials:
///
/// ```swift
/// let lifecycle = AppLifecycle(downloader: downloader, backgroundSessionIdentifier: "com.example.app.transfers")
/// try await lifecycle.launch()                                   // at every launch
/// await lifecycle.sceneDidChange(to: .inactive)                  // from .onChange(of: scenePhase)
/// lifecycle.handleEvents(forBackgroundURLSession: id, completionHandler: handler)   // from the app delegate
/// ```
///
/// Features with uploads of their own (an attachment queue) are passed as `uploads`, so their
/// uploads go to the system at the same moment. The moment transfers go to the system is
/// ``handOffPhase``, `.inactive`: the app still runs
/// in the foreground then, and Apple starts a transfer made once the app is in the
/// background at the system's discretion (`isDiscretionary`: it may wait for Wi-Fi and
/// power). `.active` takes them back. Portable: on Linux the default configuration stands
/// in for the background one (tests), and without a background session the phases change
/// nothing and ``launch()`` only resumes.
public final class AppLifecycle: Sendable {
    /// A scene's phase, as SwiftUI's `ScenePhase` and UIKit's scene callbacks tell it.
    public enum Phase: String, Sendable, CaseIterable {
        /// In the foreground and receiving events.
        case active
        /// Leaving the foreground (the app switcher, a call): queued downloads are handed off
        /// here (``AppLifecycle/handOffPhase``).
        case inactive
        /// In the background: hands off too, for a scene that skipped `.inactive`.
        case background
    }

    /// When transfers (every unfinished download, the registered uploads) are handed to the
    /// system: `.inactive` (see the type's notes).
    /// `.background` hands off too, for a scene that skips `.inactive`.
    public static let handOffPhase = Phase.inactive

    /// The engine.
    public let downloader: Downloader
    /// The hand-off session, when the app has one.
    public let background: BackgroundTransfers?
    /// The background session's identifier, when the lifecycle made the session.
    public let backgroundSessionIdentifier: String?
    private let away = Locked(false)
    /// The phase change under way: the next one waits for it (a flip to `.active` and back
    /// never runs a take-back beside a hand-off).
    private let lastChange = Locked<Task<Void, Never>?>(nil)
    /// The downloads a continued-processing task carries: left in the process at hand-off.
    private let inProcess = Locked<(@Sendable () -> Set<String>)?>(nil)
    /// Whether a continued-processing task carries uploads: the features' uploads then stay.
    private let uploadsInProcess = Locked<(@Sendable () -> Bool)?>(nil)

    /// Makes the lifecycle of `downloader`, with `background` for hand-offs (`nil`: the
    /// phases change nothing).
    public convenience init(downloader: Downloader, background: BackgroundTransfers?) {
        self.init(downloader: downloader, background: background, identifier: background?.sessionIdentifier)
    }

    private init(downloader: Downloader, background: BackgroundTransfers?, identifier: String?) {
        self.downloader = downloader
        self.background = background
        self.backgroundSessionIdentifier = identifier
    }

    /// The lifecycle of `downloader` with a background session of this identifier (give the
    /// same one at every launch; one per process). On Linux, where FoundationNetworking has
    /// no background sessions, the default configuration stands in. `uploads`: the features
    /// whose uploads go to the system with the downloads (an `AttachmentQueue`).
    public convenience init(downloader: Downloader, backgroundSessionIdentifier: String, uploads: [any BackgroundUploading] = []) {
        let background = BackgroundTransfers(downloader: downloader,
                                             configuration: BackgroundTransfers.backgroundConfiguration(identifier: backgroundSessionIdentifier))
        for uploader in uploads { background.register(uploader) }
        self.init(downloader: downloader, background: background, identifier: backgroundSessionIdentifier)
    }

    /// At every launch, and when the system relaunches the app for its background session:
    /// adopts what the system fetched while the app was gone and gives the engine back what
    /// it lost, then resumes every pending download (`Downloader.start()`). Returns the ids
    /// the engine picked up.
    @discardableResult
    public func launch() async throws -> [String] {
        if let background { try await background.recover() }
        return try await downloader.start()
    }

    /// Call on every change of the scene's phase: at ``handOffPhase`` every unfinished
    /// download (running and queued) and the registered features' uploads go to the system
    /// (and at `.background`, for a scene that skips `.inactive`); at `.active` they come
    /// back, keeping what the system fetched (`BackgroundTransfers.takeBack()`).
    public func sceneDidChange(to phase: Phase) async {
        let step = lastChange.withLock { last -> Task<Void, Never> in
            let previous = last
            let step = Task { await previous?.value; await self.apply(phase) }
            last = step
            return step
        }
        await step.value
    }

    private func apply(_ phase: Phase) async {
        guard let background else { return }
        switch phase {
        case Self.handOffPhase, .background:   // .background: a scene that skips .inactive
            away.withLock { $0 = true }
            await background.handOffAll(among: nil, except: inProcess.withLock { $0?() } ?? [])
            if uploadsInProcess.withLock({ $0?() }) != true { await background.handOffUploads() }
        case .active:
            guard away.withLock({ was in defer { was = false }; return was }) else { return }
            await background.takeBack()
        case .inactive:
            break   // not reached while handOffPhase is .inactive
        }
    }

    /// Call from `application(_:handleEventsForBackgroundURLSession:completionHandler:)`:
    /// `true` when the session is this lifecycle's, whose handler is then called on the main
    /// queue once the events are delivered (each arrived file is kept before its event
    /// returns; adoption goes on after); `false` for another session (call its owner's
    /// handler yourself).
    @discardableResult
    public func handleEvents(forBackgroundURLSession identifier: String, completionHandler: @escaping () -> Void) -> Bool {
        guard let background, backgroundSessionIdentifier == identifier else { return false }
        background.systemEventsHandler(completionHandler)
        return true
    }
}

extension AppLifecycle {
    /// Leaves the downloads `downloads` names in the process at the hand-off phase, and the
    /// features' uploads while `uploads` says so (``ContinuedTransfers``).
    func keepInProcess(downloads: @escaping @Sendable () -> Set<String>, uploads: @escaping @Sendable () -> Bool) {
        inProcess.withLock { $0 = downloads }
        uploadsInProcess.withLock { $0 = uploads }
    }

    /// Whether the app is past the hand-off phase and not yet back to `.active`.
    var isAway: Bool { away.withLock { $0 } }
}

extension BackgroundTransfers {
    /// The background session's identifier (`nil` for another configuration).
    public var sessionIdentifier: String? { session.configuration.identifier }
}
