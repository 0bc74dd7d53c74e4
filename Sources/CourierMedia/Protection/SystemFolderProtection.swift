#if !canImport(Darwin)
import Foundation

/// The platform's folder protection: none on Linux (no backup exclusion, no data
/// protection classes). The Apple one is in `SystemFolderProtection+Darwin.swift`.
public struct SystemFolderProtection: FolderProtecting {
    /// Makes it.
    public init() {}
    /// Nothing to apply here.
    public func protect(_ folder: URL) throws {}
}
#endif
