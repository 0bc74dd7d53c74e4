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
}
