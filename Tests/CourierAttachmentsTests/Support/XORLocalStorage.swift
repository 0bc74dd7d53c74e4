import Courier
import Foundation
@testable import CourierAttachments

/// A local storage that keeps every file XORed with a key (a stand-in for encryption):
/// what is on disk is never the plain bytes. Uploads get a decrypted temporary copy;
/// downloads are staged in a folder of its own, then encrypted in. Counts its operations.
final class XORLocalStorage: LocalStorage, @unchecked Sendable {
    static let key: UInt8 = 0x5A
    let directory: URL
    let stagingDirectory: URL
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    init(base: URL) throws {
        directory = base.appendingPathComponent("vault")
        stagingDirectory = base.appendingPathComponent("staging")
        for dir in [directory, stagingDirectory] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
    }

    var operations: [String: Int] { lock.withLock { counts } }
    private func note(_ op: String) { lock.withLock { counts[op, default: 0] += 1 } }

    static func xor(_ data: Data) -> Data { Data(data.map { $0 ^ key }) }

    /// Streams `source` into `target`, XORing each piece.
    private static func transcode(_ source: URL, to target: URL) throws {
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard let input = FileHandle(forReadingAtPath: source.path) else { throw CourierError(.fileNotFound, "no \(source.lastPathComponent)") }
        defer { try? input.close() }   // test double: a read-only handle
        let temp = target.appendingPathExtension("tmp")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil) else { throw CourierError(.writeFailed, "cannot create \(temp.lastPathComponent)") }
        let output = try FileHandle(forWritingTo: temp)
        while let chunk = try input.read(upToCount: 1 << 16), !chunk.isEmpty { try output.write(contentsOf: xor(chunk)) }
        try output.close()
        guard rename(temp.path, target.path) == 0 else { throw CourierError(.writeFailed, "rename failed: \(errno)") }
    }

    func save(_ data: Data, as filename: String) async throws -> Int64 {
        note("save")
        try Self.xor(data).write(to: directory.appendingPathComponent(filename), options: .atomic)
        return Int64(data.count)
    }

    func save(from source: URL, as filename: String) async throws -> Int64 {
        note("save")
        try Self.transcode(source, to: directory.appendingPathComponent(filename))
        return PartialFile.length(at: source)
    }

    func exists(_ filename: String) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent(filename).path)
    }

    func remove(_ filename: String) throws {
        note("remove")
        for url in [directory.appendingPathComponent(filename), stagingDirectory.appendingPathComponent(filename),
                    stagingDirectory.appendingPathComponent(filename + ".partial")] {
            try? FileManager.default.removeItem(at: url)   // test double: a missing file is fine
        }
    }

    func removeAll() throws {
        note("removeAll")
        for dir in [directory, stagingDirectory] {
            for item in try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil) { try FileManager.default.removeItem(at: item) }
        }
    }

    func withReadableFile<T: Sendable>(_ filename: String, _ body: @Sendable (URL) async throws -> T) async throws -> T {
        note("read")
        let plain = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("xor-\(UUID().uuidString)")
        try Self.transcode(directory.appendingPathComponent(filename), to: plain)
        defer { try? FileManager.default.removeItem(at: plain) }   // test double: a temp copy
        return try await body(plain)
    }

    func takeDownload(_ filename: String) async throws -> Int64 {
        note("take")
        let staged = stagingDirectory.appendingPathComponent(filename)
        let size = PartialFile.length(at: staged)
        try Self.transcode(staged, to: directory.appendingPathComponent(filename))
        try FileManager.default.removeItem(at: staged)
        return size
    }

    func plainFileURL(_ filename: String) -> URL? { nil }
}
