import NIOPosix

/// Runs blocking file work (fsync, rename and the directory's fsync) on NIO's thread pool,
/// so it does not hold one of the few cooperative threads while other downloads wait.
enum Blocking {
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
