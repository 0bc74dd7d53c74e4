import Courier
import Foundation

/// Protects the library's folder on platforms that can (seed 003): excluded from device
/// backups (films are large and can be downloaded again) and, on iOS-family devices,
/// readable from the first unlock after boot (so a background download can write while
/// the device is locked). ``SystemFolderProtection`` is the platform's; tests pass their own.
public protocol FolderProtecting: Sendable {
    /// Applies the protections to `folder`; throws what the system reported.
    func protect(_ folder: URL) throws
}

/// When the library applies its folder's protections: whenever it (re)creates the folder,
/// since a recreated folder has lost them (backup exclusion belongs to the folder, not its
/// path). A failure is reported (logged, and kept for the app to read), never swallowed,
/// and never fails a download: the files are still right, only less protected.
struct LibraryFolder: Sendable {
    let url: URL
    let protection: any FolderProtecting

    /// Creates the folder if it is missing; returns the protection failure, if any.
    @discardableResult
    func ensure() throws -> CourierError? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue { return nil }
        do {
            try Durability.createFolder(url)
        } catch {
            throw FileErrors.error(error, "create the library folder", url, .write)
        }
        return applyProtection()
    }

    /// Applies the protections now; returns the failure, if any.
    func applyProtection() -> CourierError? {
        do {
            try protection.protect(url)
            return nil
        } catch {
            return CourierError(.writeFailed, "could not exclude \(url.lastPathComponent) from backups or protect it: \(error.localizedDescription)", underlying: error)
        }
    }
}
