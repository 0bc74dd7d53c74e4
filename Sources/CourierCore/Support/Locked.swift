import Foundation

/// A value behind a lock, shared by the package's modules (not public API).
///
/// Synchronization's `Mutex` would do, but needs iOS 18 / macOS 15; this runs wherever
/// Courier does (iOS 16, macOS 13, Linux). Never call out of the closure to code that could
/// take the same lock: it is not re-entrant.
package final class Locked<Value>: @unchecked Sendable { // every access goes through `lock`
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, alone.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
