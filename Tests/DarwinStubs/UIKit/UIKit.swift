@_exported import Foundation

// UIKit as far as the example app uses it, so it type-checks on Linux
// (scripts/examples-check). Compiled as a module named UIKit. Each declaration is Apple's
// (developer.apple.com/documentation/uikit); the bodies are never run.

/// `@MainActor class UIApplication: UIResponder` (here without its superclass).
@MainActor open class UIApplication {}

/// `@MainActor protocol UIApplicationDelegate: NSObjectProtocol`, with
/// `optional func application(_ application: UIApplication, handleEventsForBackgroundURLSession identifier: String, completionHandler: @escaping () -> Void)`
/// (optional requirements need @objc, which Linux lacks: here it is required, so a delegate
/// whose method is misspelled does not type-check; every delegate checked here implements it).
@MainActor public protocol UIApplicationDelegate: NSObjectProtocol {
    func application(_ application: UIApplication, handleEventsForBackgroundURLSession identifier: String, completionHandler: @escaping () -> Void)
}
