import CourierDownloadsModel
import CourierURLSession
import Foundation
import SwiftUI
#if os(iOS) || COURIER_DARWIN_TYPECHECK
import UIKit
#endif

/// The example app: a catalog whose DOWNLOAD buttons follow the seven rules, with each
/// download's progress, pause, resume and cancel (`DownloadsView`).
@main
struct CourierDownloadsApp: App {
    #if os(iOS) || COURIER_DARWIN_TYPECHECK
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var delegate
    #endif
    @Environment(\.scenePhase) private var scenePhase

    var body: some Scene {
        WindowGroup {
            DownloadsView(transfers: AppTransfers.shared)
                .task { try? await AppTransfers.shared.launch() }   // adopt what the system fetched, resume the rest
        }
        .onChange(of: scenePhase) { _, phase in
            // One moment to hand off: when the scene becomes .inactive (AppLifecycle.handOffPhase).
            let lifecycle = AppTransfers.shared.lifecycle
            Task {
                switch phase {
                case .active: await lifecycle.sceneDidChange(to: .active)
                case .inactive: await lifecycle.sceneDidChange(to: .inactive)
                case .background: await lifecycle.sceneDidChange(to: .background)
                @unknown default: break
                }
            }
        }
    }
}

/// The app's one `Transfers`, made at first use.
@MainActor enum AppTransfers {
    static let shared: Transfers = {
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        let catalog = [
            CatalogEntry(name: "big-buck-bunny.mp4", title: "Big Buck Bunny", url: "https://download.blender.org/peach/bigbuckbunny_movies/BigBuckBunny_320x180.mp4"),
            CatalogEntry(name: "sintel.mp4", title: "Sintel", url: "https://download.blender.org/durian/movies/sintel-1024-surround.mp4"),
        ]
        do {
            return try Transfers(folder: support.appendingPathComponent("CourierDownloads"), catalog: catalog,
                                 backgroundSessionIdentifier: "com.example.courier-downloads.transfers")
        } catch {
            fatalError("the example's database could not be opened: \(error)")   // an example; an app would show it
        }
    }()
}

#if os(iOS) || COURIER_DARWIN_TYPECHECK
/// The system's background events go to the lifecycle, which calls the handler once what
/// arrived is adopted.
final class AppDelegate: NSObject, UIApplicationDelegate {
    func application(_ application: UIApplication, handleEventsForBackgroundURLSession identifier: String,
                     completionHandler: @escaping () -> Void) {
        if !AppTransfers.shared.lifecycle.handleEvents(forBackgroundURLSession: identifier, completionHandler: completionHandler) {
            completionHandler()
        }
    }
}
#endif
