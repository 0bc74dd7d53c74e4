import Foundation
import Testing
@testable import CourierCore

/// The partial file's write path: gathered, aligned direct writes in the background with
/// buffered heads and tails, checkpoints that claim only what is in the file, and resumes at
/// unaligned offsets. Whatever the chunking, the file holds exactly the bytes appended.
@Suite struct PartialFileTests {
    @Test func pipelinedWritesKeepEveryByteInPlace() async throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-pf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("x.partial")
        var rng = SplitMix(seed: 42)
        let total = 9 * (1 << 20) + 1234
        let data = Data((0..<total).map { _ in UInt8(truncatingIfNeeded: rng.next()) })

        // First run: odd-sized chunks, checkpoints, then stop at an unaligned length.
        var file = try PartialFile(url: url, bufferSize: 256 << 10)
        var offset = 0
        let stopAt = 5 * (1 << 20) + 777
        var checkpoints: [Int64] = []
        while offset < stopAt {
            let n = min(stopAt - offset, Int(rng.next() % 70_000) + 1)
            if file.wouldWait(appending: n) { try await file.settle() }
            try data[offset..<(offset + n)].withUnsafeBytes { try file.appendPipelined($0) }
            offset += n
            if rng.next() % 20 == 0 {
                try await file.settle()
                let claimed = try file.checkpoint()
                #expect(claimed <= Int64(offset) && claimed > Int64(offset) - 4096)
                #expect(PartialFile.length(at: url) >= claimed)   // claimed bytes are in the file
                checkpoints.append(claimed)
            }
        }
        try await file.settle()
        try file.close()
        #expect(PartialFile.length(at: url) == Int64(stopAt))
        #expect(!checkpoints.isEmpty)

        // Second run resumes at the unaligned length and finishes.
        file = try PartialFile(url: url, bufferSize: 256 << 10)
        #expect(file.logicalLength == Int64(stopAt))
        while offset < total {
            let n = min(total - offset, Int(rng.next() % 300_000) + 1)
            if file.wouldWait(appending: n) { try await file.settle() }
            try data[offset..<(offset + n)].withUnsafeBytes { try file.appendPipelined($0) }
            offset += n
        }
        try await file.settle()
        try await file.syncAndClose()
        #expect(try Data(contentsOf: url) == data)
    }

    /// A disk that fails every call of one kind with one error (the simulator's seam).
    struct FailingDisk: DiskFaults {
        let operation: DiskOperation, err: Int32
        func fault(_ operation: DiskOperation, fd: Int32) -> Int32? { operation == self.operation ? err : nil }
    }

    /// A partial whose sync failed is not known to hold its bytes: it is deleted, by either
    /// way of syncing it (the run's descriptor, or by its path for a segmented download), and
    /// the error says what failed. Without the deletion, a resume went on from it and
    /// completed a wrong file (the simulator's seed 30000169).
    @Test func aPartialWhoseSyncFailedIsDeleted() async throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-pf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("x.partial")
        let failing = EngineExecutor.current.with(disk: FailingDisk(operation: .sync, err: EIO))
        for byPath in [false, true] {
            let file = try PartialFile(url: url)
            try Data(repeating: 7, count: 100_000).withUnsafeBytes { try file.append($0) }
            let fd = try file.handOver()
            if byPath { _ = closeDescriptor(fd) }
            let thrown = EngineExecutor.$current.withValue(failing) {
                #expect(throws: CourierError.self) { byPath ? try PartialFile.sync(url) : try PartialFile.syncAndClose(fd, url) }
            }
            #expect(thrown?.code == .writeFailed && thrown?.message.contains("fsync") == true, "\(String(describing: thrown))")
            #expect(!FileManager.default.fileExists(atPath: url.path), "by path: \(byPath)")
        }
        // A path that names another file by then (a run that took the download over copied the
        // partial to a file of its own) keeps it: only the file whose sync failed goes.
        let stale = try PartialFile(url: url)
        try Data(repeating: 3, count: 1000).withUnsafeBytes { try stale.append($0) }
        let staleFD = try stale.handOver()
        try FreshCopy.replace(url)
        EngineExecutor.$current.withValue(failing) {
            #expect(throws: CourierError.self) { try PartialFile.syncAndClose(staleFD, url) }
        }
        #expect(PartialFile.length(at: url) == 1000)
        try FileManager.default.removeItem(at: url)
        // The hand-off's splice: a failed sync deletes the partial too (a 200 spliced at 0
        // rewrote all of it).
        let body = dir.appendingPathComponent("body")
        try Data(repeating: 4, count: 3000).write(to: body)
        try Data(repeating: 5, count: 2000).write(to: url)
        EngineExecutor.$current.withValue(failing) {
            #expect(throws: CourierError.self) { try Downloader.splice(body, into: url, at: 0) }
        }
        #expect(!FileManager.default.fileExists(atPath: url.path))
        // A full disk: the write and the reservation say so, and what reached the file stays.
        let full = EngineExecutor.current.with(disk: FailingDisk(operation: .write, err: ENOSPC))
        let file = try PartialFile(url: url)
        try Data(repeating: 1, count: 5000).withUnsafeBytes { try file.append($0) }
        try file.flush()
        EngineExecutor.$current.withValue(full) {
            #expect { try Data(repeating: 2, count: 5000).withUnsafeBytes { try file.append($0) }; try file.flush() } throws: { ($0 as? CourierError)?.code == .noSpace }
            #expect { try PartialFile.preallocate(dir.appendingPathComponent("y.partial"), length: 1 << 20) } throws: { ($0 as? CourierError)?.code == .noSpace }
        }
        try file.close()
        #expect(PartialFile.length(at: url) == 5000)
    }

    /// Fails the syncs of folders only: a rename or link that may not survive a power cut.
    struct FolderSyncFails: DiskFaults {
        var err = EIO
        func fault(_ operation: DiskOperation, fd: Int32) -> Int32? {
            var st = stat()
            return operation == .sync && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR ? err : nil
        }
    }

    /// A finished file's rename (or an unnamed one's link) whose folder's sync fails is taken
    /// back, and the error thrown: no record may say done behind a name a power cut can take
    /// away. Renamed, the file goes back to its partial name, whole; linked, the name goes
    /// (the descriptor keeps the bytes). Before, the failure was ignored and the download
    /// completed: the simulator's power cut then left a completed record and no file (seed
    /// 40002245).
    @Test func aRenameWhoseFolderSyncFailedIsTakenBack() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-pf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }   // a temporary folder
        let partial = dir.appendingPathComponent("x.bin.partial"), final = dir.appendingPathComponent("x.bin")
        let bytes = Data(repeating: 9, count: 70_000)
        let failing = EngineExecutor.current.with(disk: FolderSyncFails())
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try bytes.write(to: partial)
        EngineExecutor.$current.withValue(failing) {
            #expect { try PartialFile.finalize(partial: partial, to: final) } throws: { ($0 as? CourierError)?.code == .writeFailed }
        }
        #expect(!FileManager.default.fileExists(atPath: final.path))
        #expect(try Data(contentsOf: partial) == bytes)
        try PartialFile.finalize(partial: partial, to: final)   // the disk well again: in place
        #expect(try Data(contentsOf: final) == bytes && !FileManager.default.fileExists(atPath: partial.path))
        // A file system that cannot sync folders at all (EINVAL: some network and FUSE mounts)
        // is not a failing disk: the file goes in place, as it did before the rule.
        try FileManager.default.moveItem(at: final, to: partial)
        EngineExecutor.$current.withValue(EngineExecutor.current.with(disk: FolderSyncFails(err: EINVAL))) {
            #expect(throws: Never.self) { try PartialFile.finalize(partial: partial, to: final) }
        }
        #expect(try Data(contentsOf: final) == bytes)
        #if os(Linux)
        let other = dir.appendingPathComponent("y.bin"), otherPartial = dir.appendingPathComponent("y.bin.partial")
        let file = try PartialFile(unnamedAt: otherPartial, bufferSize: 64 << 10)
        defer { try? file.close() }   // closes the descriptor
        try bytes.withUnsafeBytes { try file.append($0) }
        try file.flush()
        EngineExecutor.$current.withValue(failing) {
            #expect { try PartialFile.link(file.fd, partial: otherPartial, final: other) } throws: { ($0 as? CourierError)?.code == .writeFailed }
        }
        #expect(!FileManager.default.fileExists(atPath: other.path) && !FileManager.default.fileExists(atPath: otherPartial.path))
        #endif
    }
}
