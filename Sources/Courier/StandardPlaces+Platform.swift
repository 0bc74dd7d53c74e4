import Foundation

/// The platform's usual database file and root (``StandardPlaces``), from `environment` on
/// Linux.
enum PlatformPlaces {
    static func paths(environment: [String: String]) -> (database: URL, root: URL) {
        #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
        let fm = FileManager.default
        let support = fm.urls(for: .applicationSupportDirectory, in: .userDomainMask).first ?? fm.temporaryDirectory
        let documents = fm.urls(for: .documentDirectory, in: .userDomainMask).first ?? fm.temporaryDirectory
        return (support.appendingPathComponent("Courier/courier.sqlite"), documents)
        #else
        let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory())
        func folder(_ variable: String, _ fallback: String) -> URL {
            // The XDG rule: only an absolute path counts.
            if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
            return home.appendingPathComponent(fallback)
        }
        return (folder("XDG_DATA_HOME", ".local/share").appendingPathComponent("courier/courier.sqlite"), folder("XDG_DOWNLOAD_DIR", "Downloads"))
        #endif
    }
}
