import Courier
import Foundation

/// The pure rules that turn iCloud's metadata into a ``DocumentState``, and metadata
/// paths into a container's relative paths. Advisory only: open/read decides (seed 004).
public enum ICloudStatus {
    /// The state an item's metadata describes; `nil` (no metadata yet) is unknown.
    ///
    /// - An error: `NSUbiquitousFileUnavailableError` (not uploaded yet by the device that
    ///   made it) is a wait, not a failure: *not downloaded*, so the watchdog triggers again.
    ///   Cocoa's file-not-found errors get their codes; anything else stays the system's:
    ///   `E_SYSTEM` with its domain and code in `CourierError.system` (and its text).
    /// - *current* is current (100 %); *downloaded* (a newer version exists) and *not
    ///   downloaded* are *downloading* while the index says a transfer runs, else *not
    ///   downloaded*. The percent is passed on as it is: it may jump from 0 to 100.
    public static func state(of item: UbiquityItem?) -> DocumentState {
        guard let item else { return DocumentState(status: nil) }
        let percent = item.percentDownloaded
        if let error = item.downloadingError {
            if error.domain == CocoaFileErrors.cocoaDomain, error.code == CocoaFileErrors.ubiquitousFileUnavailable {
                return DocumentState(status: .notDownloaded, percent: percent)
            }
            let failure = CocoaFileErrors.courierError(error, during: .read, path: item.path)
                ?? CourierError(.system, "iCloud could not download it: \(error.message) (\(error.domain) \(error.code))", system: error.system)
            return DocumentState(status: .failed(failure), percent: percent)
        }
        let transferring = item.isDownloading ?? (percent.map { $0 > 0 && $0 < 100 } ?? false)
        switch item.downloadingStatus {
        case .current?:
            return DocumentState(status: .current, percent: percent ?? 100)
        case .downloaded?, .notDownloaded?:
            return DocumentState(status: transferring ? .downloading : .notDownloaded, percent: percent)
        case nil:
            return DocumentState(status: item.isDownloading == true ? .downloading : nil, percent: percent)
        }
    }

    /// A metadata path relative to the container's root, or `nil` when it lies outside.
    /// `/private/var/…` and `/var/…` (and `/private/tmp`, `/private/etc`) are one place:
    /// the index and `FileManager` do not always spell them alike.
    public static func relativePath(_ itemPath: String, root: String) -> String? {
        let item = canonical(itemPath), base = canonical(root)
        guard item.hasPrefix(base + "/") else { return nil }
        let relative = String(item.dropFirst(base.count + 1))
        return relative.isEmpty ? nil : relative
    }

    /// The path standardized (`.`, `..`, doubled and trailing slashes) with the `/private`
    /// prefix of Apple's firmlinked folders removed.
    static func canonical(_ path: String) -> String {
        var p = URL(fileURLWithPath: path).standardizedFileURL.path
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        for firmlinked in ["/var", "/tmp", "/etc"] where p == "/private" + firmlinked || p.hasPrefix("/private" + firmlinked + "/") {
            p = String(p.dropFirst("/private".count))
        }
        return p
    }
}
