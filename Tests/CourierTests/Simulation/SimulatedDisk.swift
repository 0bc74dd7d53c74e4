import CourierTestSupport
import Foundation
@testable import CourierCore

/// The world's disk (issue 46), in a world that draws a faulty one: it fills up for a while
/// (every write of a run to its partial, and every reservation or check of space for them,
/// fails with `ENOSPC` until space is freed), or its syncs fail at times (`EIO`), or both.
/// A failed sync loses what the file held that was not yet on the disk, as Linux's page
/// cache may after a failed write-back: the simulator turns the file's last 4 KiB page to
/// zeros (a real disk would lose only pages written since the last sync; the engine deletes
/// the file either way), so a run that trusted such a file would complete a wrong one. The
/// writes a run makes to its partial meet the full disk; the hand-off's splice and the
/// take-over's copy (copied in the kernel) meet only its failing syncs.
///
/// The engine asks it before each of those calls (``DiskFaults``), on the simulator's one
/// thread, so its draws come in the seed's order.
final class SimulatedDisk: DiskFaults, @unchecked Sendable { // `rng` under `lock`
    private let lock = NSLock()
    private var rng: SplitMix
    private let clock: ManualEngineClock
    /// When the disk is full.
    let full: Range<ContinuousClock.Instant>?
    /// One sync in this many fails (0: none does).
    let syncFailures: UInt64
    let trace: SimulationScenario.Trace

    /// A disk drawn from `stream`: full for 1 to 30 s starting within the first 6 s, or
    /// failing one sync in 3 to 8, or both.
    init(_ stream: inout SplitMix, clock: ManualEngineClock, trace: SimulationScenario.Trace) {
        let kind = stream.next() % 3
        if kind != 1 {
            let start = clock.now + .milliseconds(Int64(stream.next() % 6000))
            full = start..<start + .milliseconds(Int64(1000 + stream.next() % 29_000))
            trace.add("disk: full from \(full!.lowerBound - clock.now) for \(full!.upperBound - full!.lowerBound)")
        } else {
            full = nil
        }
        syncFailures = kind != 0 ? 3 + stream.next() % 6 : 0
        if syncFailures > 0 { trace.add("disk: one sync in \(syncFailures) fails") }
        rng = SplitMix(seed: stream.next())
        self.clock = clock
        self.trace = trace
    }

    func fault(_ operation: DiskOperation, fd: Int32) -> Int32? {
        switch operation {
        case .write:
            guard let full, full.contains(clock.now) else { return nil }
            return ENOSPC
        case .sync:
            guard syncFailures > 0 else { return nil }
            lock.lock()
            let fails = rng.next() % syncFailures == 0
            lock.unlock()
            guard fails else { return nil }
            trace.add("disk: a sync fails (EIO)\(Self.loseLastPage(fd).map { ", \($0) B of its file lost" } ?? "")")
            return EIO
        }
    }

    /// Zeroes the last 4 KiB page of the regular file `fd` names; how many bytes, or nil for
    /// a folder or an empty file.
    private static func loseLastPage(_ fd: Int32) -> Int? {
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0 else { return nil }
        let writable = open("/proc/self/fd/\(fd)", O_WRONLY | O_CLOEXEC)   // the descriptor may be read-only
        guard writable >= 0 else { return nil }
        defer { close(writable) }
        let start = (Int64(st.st_size) - 1) / 4096 * 4096
        let count = Int(Int64(st.st_size) - start)
        let zeros = [UInt8](repeating: 0, count: count)
        return pwrite(writable, zeros, count, off_t(start)) == count ? count : nil
    }
}
