import Foundation
import Testing
@testable import CourierCore

/// The `E_FNF` codes mean no such file and nothing else; every other failure keeps its
/// own code and the system's error.
@Suite struct FileErrorsTests {
    @Test(arguments: [
        (ENOENT, FileErrors.Access.read, "E_FNF_READ"), (ENOENT, .write, "E_FNF_WRITE"), (ENOTDIR, .write, "E_FNF_WRITE"),
        (EACCES, .read, "E_PERMISSION"), (EPERM, .write, "E_PERMISSION"), (EROFS, .write, "E_PERMISSION"),
        (EIO, .read, "E_READ"), (EIO, .write, "E_WRITE"), (EISDIR, .write, "E_WRITE"),
        (ENOSPC, .write, "E_NO_SPACE"), (EDQUOT, .write, "E_NO_SPACE"), (EFBIG, .write, "E_NO_SPACE"),
    ])
    func errnoMapsToOneCode(_ err: Int32, _ access: FileErrors.Access, _ code: String) {
        let e = FileErrors.error(err, "write", URL(fileURLWithPath: "/x/f.bin"), access)
        #expect(e.code.rawValue == code)
        #expect(e.message.contains("f.bin") && e.underlying != nil)
    }

    @Test func realFailuresGetTheirCodes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }   // test cleanup
        // A folder that does not exist: no such file.
        #expect(throws: CourierError.self) { try AtomicWrite.write(Data("x".utf8), to: dir.appendingPathComponent("no/such/f")) }
        do { try AtomicWrite.write(Data("x".utf8), to: dir.appendingPathComponent("no/such/f")) } catch let e as CourierError { #expect(e.code == .fileWrite) }
        // A directory in the way of the final name: not "no such file".
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("taken/inner"), withIntermediateDirectories: true)
        do { try AtomicWrite.write(Data("x".utf8), to: dir.appendingPathComponent("taken")); Issue.record("must fail") } catch let e as CourierError {
            #expect(e.code != .fileWrite && e.code != .fileNotFound && e.code != .fileRead, "\(e)")
        }
        // Nothing is left behind by a failed atomic write, and a good one is whole.
        try AtomicWrite.write(Data("hello".utf8), to: dir.appendingPathComponent("ok.txt"))
        #expect(try String(contentsOf: dir.appendingPathComponent("ok.txt"), encoding: .utf8) == "hello")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }
}
