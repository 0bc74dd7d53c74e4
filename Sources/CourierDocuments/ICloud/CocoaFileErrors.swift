import Courier
import Foundation

/// Seed 004's error table for iCloud documents: Cocoa's file-not-found errors get codes
/// of their own; every other error stays native.
///
/// | error | during | code |
/// |---|---|---|
/// | `NSFileNoSuchFileError` (4) | a read, or anything but a write | `E_FNF` |
/// | `NSFileNoSuchFileError` (4) | a write | `E_FNF_WRITE` |
/// | `NSFileReadNoSuchFileError` (260) | any | `E_FNF_READ` |
/// | a write error (512…) whose underlying error is POSIX `ENOENT` | a write | `E_FNF_WRITE` |
///
/// Apple's SDK has no `NSFileWriteNoSuchFileError` (the seed names one): a write to a
/// missing place reports `NSFileNoSuchFileError`, or a write error with `ENOENT` beneath.
public enum CocoaFileErrors {
    /// `NSFileNoSuchFileError`.
    public static let noSuchFile = 4
    /// `NSFileReadNoSuchFileError`.
    public static let readNoSuchFile = 260
    /// `NSFileWriteUnknownError`, the first of the write errors (512…642).
    public static let writeErrors = 512...642
    /// `NSUbiquitousFileUnavailableError`: not uploaded yet by the device that made it, a
    /// state to wait out ("Unable to initiate download"), not "not found".
    public static let ubiquitousFileUnavailable = 4353
    static let cocoaDomain = "NSCocoaErrorDomain"
    static let posixDomain = "NSPOSIXErrorDomain"

    /// What a file operation was doing when it failed.
    public enum Operation: Sendable {
        /// Reading: a missing file is `E_FNF`.
        case read
        /// Writing: a missing place to write is `E_FNF_WRITE`.
        case write
        /// Anything else (listing, moving, coordinating): judged as a read.
        case other
    }

    /// The Courier error for a Cocoa file-not-found error, else `nil` (report it natively).
    public static func courierError(_ error: UbiquityError, during operation: Operation, path: String) -> CourierError? {
        guard error.domain == cocoaDomain else { return nil }
        switch error.code {
        case noSuchFile where operation == .write:
            return CourierError(.fileWrite, "the place to write \(path) does not exist")
        case noSuchFile:
            return CourierError(.fileNotFound, "\(path) does not exist")
        case readNoSuchFile:
            return CourierError(.fileRead, "\(path) was not found when read")
        case writeErrors where operation == .write && error.underlying?.domain == posixDomain && error.underlying?.code == Int(ENOENT):
            return CourierError(.fileWrite, "the place to write \(path) does not exist")
        default:
            return nil
        }
    }

    /// `NSUserCancelledError`: a coordination given up (the task was cancelled).
    public static let userCancelled = 3072

    /// `error` mapped by the table, or itself; a cancelled coordination is a `CancellationError`.
    public static func map(_ error: any Error, during operation: Operation, path: String) -> any Error {
        if error is CourierError || error is CancellationError { return error }
        let values = UbiquityError(error)
        if values.domain == cocoaDomain, values.code == userCancelled { return CancellationError() }
        guard let mapped = courierError(values, during: operation, path: path) else { return error }
        return CourierError(mapped.code, mapped.message, underlying: error, system: values.system)
    }
}
