import Dispatch

/// Runs blocking file work (fsync, rename, the directory's fsync, a full buffer's write) on
/// a concurrent dispatch queue, so it does not hold one of the few cooperative threads while
/// other downloads wait.
enum Blocking {
    private static let queue = DispatchQueue(label: "courier.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
