import Courier
@testable import CourierAttachments
import Foundation
import Testing

/// The pure rules of resumable uploads: whether a persisted upload goes on, which S3 parts
/// go up again, and what a tus server's headers and replies mean.
struct UploadRulesTests {
    private func source(size: Int, modified: Date = Date(timeIntervalSince1970: 1_700_000_000.25)) throws -> UploadSource {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("upload-rule-\(UUID().uuidString)")
        try Data(repeating: 7, count: size).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path)
        return try UploadSource(url: url)
    }

    private func record(_ s: UploadSource, remoteId: String? = "up-1", kind: UploadProtocol = .s3, target: String = "b/k", partSize: Int64 = 8) -> UploadRecord {
        var r = UploadRecord(id: "u", sourcePath: s.url.path, sourceSize: s.size, sourceModified: s.modified, kind: kind, target: target, partSize: partSize)
        r.remoteId = remoteId
        return r
    }

    @Test func aPersistedUploadGoesOnOnlyForTheSameFileAndPlace() throws {
        let s = try source(size: 100)
        #expect(UploadResume.decide(record: nil, source: s, kind: .s3, target: "b/k", partSize: 8) == .restart(reason: "a new upload", abandon: nil))
        #expect(UploadResume.decide(record: record(s), source: s, kind: .s3, target: "b/k", partSize: 8) == .resume(remoteId: "up-1"))
        // No server handle yet: nothing to abandon.
        if case .restart(_, let abandon) = UploadResume.decide(record: record(s, remoteId: nil), source: s, kind: .s3, target: "b/k", partSize: 8) {
            #expect(abandon == nil)
        } else { Issue.record("no handle must restart") }
        // Elsewhere, another part size, another protocol: the old one is abandoned.
        for (kind, target, part) in [(UploadProtocol.s3, "b/other", Int64(8)), (.s3, "b/k", 16), (.tus, "b/k", 8)] {
            #expect(UploadResume.decide(record: record(s), source: s, kind: kind, target: target, partSize: part) != .resume(remoteId: "up-1"))
        }
        // The file changed: size, or modification time (sub-second counts).
        let bigger = try source(size: 101)
        let touched = try source(size: 100, modified: Date(timeIntervalSince1970: 1_700_000_000.5))
        for changed in [bigger, touched] {
            var r = record(s)
            r.sourcePath = changed.url.path
            guard case .restart(let reason, let abandon) = UploadResume.decide(record: r, source: changed, kind: .s3, target: "b/k", partSize: 8) else {
                Issue.record("a changed file must restart"); continue
            }
            #expect(reason.contains("changed") && abandon == "up-1")
        }
    }

    @Test func partsCoverTheFileOnce() {
        #expect(MultipartPlan.parts(size: 0, partSize: 5) == [.init(number: 1, offset: 0, length: 0)])
        #expect(MultipartPlan.parts(size: 5, partSize: 5) == [.init(number: 1, offset: 0, length: 5)])
        #expect(MultipartPlan.parts(size: 11, partSize: 5).map(\.length) == [5, 5, 1])
        #expect(MultipartPlan.parts(size: 11, partSize: 5).map(\.offset) == [0, 5, 10])
        #expect(MultipartPlan.parts(size: 11, partSize: 5).map(\.number) == [1, 2, 3])
    }

    private func part(_ n: Int, md5: String, etag: String? = nil) -> UploadPart {
        UploadPart(uploadId: "u", number: n, offset: Int64(n - 1) * 5, size: 5, etag: etag ?? "\"\(md5)\"", md5: md5, sha256: "s")
    }

    @Test func onlyPartsTheServerDoesNotHoldAsTheFileHasThemGoUpAgain() {
        let planned = MultipartPlan.parts(size: 14, partSize: 5)   // 5, 5, 4
        let local = [1: "aa", 2: "bb", 3: "cc"]
        // Nothing anywhere: all three.
        #expect(MultipartPlan.decide(planned: planned, recorded: [], listed: [], localMD5: local) == .send(planned, held: []))
        // Part 1 recorded and listed; part 2 listed but never recorded (killed after the
        // server's reply): both held; part 3 goes.
        let listed = [MultipartPlan.Listed(number: 1, size: 5, etag: "\"AA\""), .init(number: 2, size: 5, etag: "&quot;bb&quot;")]
        #expect(MultipartPlan.decide(planned: planned, recorded: [part(1, md5: "aa")], listed: listed, localMD5: local)
                == .send([planned[2]], held: listed))
        // A listed part of the wrong size or another ETag is sent again.
        let wrong = [MultipartPlan.Listed(number: 1, size: 4, etag: "\"aa\""), .init(number: 2, size: 5, etag: "\"zz\"")]
        #expect(MultipartPlan.decide(planned: planned, recorded: [], listed: wrong, localMD5: local) == .send(planned, held: []))
        // A server whose ETags are not MD5s: held when the ETag is the one recorded for these bytes.
        let opaque = [MultipartPlan.Listed(number: 1, size: 5, etag: "\"kms-1\"")]
        #expect(MultipartPlan.decide(planned: planned, recorded: [part(1, md5: "aa", etag: "\"kms-1\"")], listed: opaque, localMD5: local)
                == .send(Array(planned[1...]), held: opaque))
        // The file's bytes of a part already sent changed: a new upload, never a mix.
        guard case .restart(let reason) = MultipartPlan.decide(planned: planned, recorded: [part(2, md5: "b0")], listed: listed, localMD5: local) else {
            Issue.record("changed bytes must restart"); return
        }
        #expect(reason.contains("part 2"))
    }

    @Test func tusHeadersAreReadStrictly() throws {
        #expect(try TusHeaders.offset("0") == 0)
        #expect(try TusHeaders.offset(" 1048576 ") == 1_048_576)
        for bad in ["-1", "+5", "1e3", "12 34", "", "0x10", "99999999999999999999", "١٢"] {
            #expect(throws: CourierError.self, "\(bad)") { try TusHeaders.offset(bad) }
        }
        #expect((try? TusHeaders.offset(nil)) == nil)
        #expect(try TusHeaders.length(nil) == nil)
        #expect(try TusHeaders.length("42") == 42)
        let base = URL(string: "http://127.0.0.1:8080/files/")!
        #expect(try TusHeaders.location("/files/abc", relativeTo: base).absoluteString == "http://127.0.0.1:8080/files/abc")
        #expect(try TusHeaders.location("abc", relativeTo: base).absoluteString == "http://127.0.0.1:8080/files/abc")
        #expect(try TusHeaders.location("https://cdn.example/u/1", relativeTo: base).absoluteString == "https://cdn.example/u/1")
        for bad in [nil, "", "file:///etc/passwd", "ftp://h/x", "http://user:pw@h/x"] {
            #expect(throws: CourierError.self, "\(String(describing: bad))") { try TusHeaders.location(bad, relativeTo: base) }
        }
        #expect(TusHeaders.extensions("creation, termination,checksum ,") == ["creation", "termination", "checksum"])
        #expect(TusHeaders.checksumAlgorithms("SHA1, md5") == ["sha1", "md5"])
        #expect(TusHeaders.speaksVersion("1.0.0") && !TusHeaders.speaksVersion("0.2.2") && !TusHeaders.speaksVersion(nil))
        #expect(TusHeaders.metadata(["filename": "a b.jpg", "bad key": "x", "type": "image/jpeg"]) == "filename YSBiLmpwZw==,type aW1hZ2UvanBlZw==")
    }

    @Test func aPatchReplyIsJudgedAgainstWhatWasSent() throws {
        #expect(try TusPatchOutcome.judge(status: 204, offsetHeader: "150", sentFrom: 100, length: 50) == .confirmed(150))
        // A server may keep part of a chunk: it says where it is.
        #expect(try TusPatchOutcome.judge(status: 204, offsetHeader: "120", sentFrom: 100, length: 50) == .confirmed(120))
        for bad in ["99", "151"] {
            #expect(throws: CourierError.self) { try TusPatchOutcome.judge(status: 204, offsetHeader: bad, sentFrom: 100, length: 50) }
        }
        #expect(throws: CourierError.self) { try TusPatchOutcome.judge(status: 204, offsetHeader: nil, sentFrom: 100, length: 50) }
        #expect(try TusPatchOutcome.judge(status: 409, offsetHeader: nil, sentFrom: 0, length: 1) == .askOffset)
        #expect(try TusPatchOutcome.judge(status: 404, offsetHeader: nil, sentFrom: 0, length: 1) == .recreate)
        #expect(try TusPatchOutcome.judge(status: 410, offsetHeader: nil, sentFrom: 0, length: 1) == .recreate)
        #expect(try TusPatchOutcome.judge(status: 460, offsetHeader: nil, sentFrom: 0, length: 1) == .resend)
        for passing in [408, 423, 429, 500, 503] { #expect(try TusPatchOutcome.judge(status: passing, offsetHeader: nil, sentFrom: 0, length: 1) == .retry) }
        #expect(try TusPatchOutcome.judge(status: 403, offsetHeader: nil, sentFrom: 0, length: 1) == .fail(403))
    }
}
