#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
// Darwin only; type-checked on Linux by scripts/darwin-typecheck against Tests/DarwinStubs.
#if COURIER_DARWIN_TYPECHECK
import CourierMedia
import DarwinStubs
#endif
import Foundation

/// Apple platforms: the folder is excluded from backup (`isExcludedFromBackup`) and, on
/// iOS, tvOS, watchOS and visionOS, protected until first user authentication.
public struct SystemFolderProtection: FolderProtecting {
    /// Makes it.
    public init() {}

    /// Excludes `folder` from backup and, except on macOS, protects it until first user
    /// authentication.
    public func protect(_ folder: URL) throws {
        var url = folder
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try url.setResourceValues(values)
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS) || COURIER_DARWIN_TYPECHECK
        try FileManager.default.setAttributes([.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: folder.path)
        #endif
    }
}
#endif
