import Foundation

/// What the simulator's disk does in place of a file call (issue 46): a disk that fills up
/// and frees again, a sync that fails. Set for a simulated world on the engine's executor
/// (``EngineExecutor/disk``); never in an app or the command line, where every call is the
/// system's and this costs one task-local read per write of a buffer or sync.
package protocol DiskFaults: Sendable {
    /// The `errno` that `operation` fails with instead of running, or nil (it runs). `fd` is
    /// the descriptor being synced, for a sync.
    func fault(_ operation: DiskOperation, fd: Int32) -> Int32?
}

/// The calls a simulated disk may fail.
package enum DiskOperation: Sendable {
    /// Bytes written to a download's file, or space reserved or checked for them.
    case write
    /// A file or folder forced to stable storage.
    case sync
}

extension EngineExecutor {
    /// The `errno` the simulated disk fails `operation` with, if a world set one and it does.
    static func diskFault(_ operation: DiskOperation, fd: Int32 = -1) -> Int32? {
        current.disk?.fault(operation, fd: fd)
    }
}
