import Foundation
import Testing
@testable import CourierCore
@_spi(Testing) import CourierURLSession

/// Recovering upload hand-offs at launch: a dead process's pieces go back to their upload
/// (their copies deleted), a live one's are left to it, and copies no row owns are deleted.
@Suite(.serialized) struct UploadRecoveryTests {
    @Test func recoveryEndsTheDeadProcesssPiecesLeavesTheLiveOnesAndTidiesStrayCopies() async throws {
        try await withFixture { fx in
            let d = try fx.downloader()
            let stash = fx.root.appendingPathComponent("stash")
            let uploads = stash.appendingPathComponent("uploads")
            try FileManager.default.createDirectory(at: uploads, withIntermediateDirectories: true)
            try await d.database.beginUpload(UploadRecord(id: "put:a", sourcePath: "/tmp/a", sourceSize: 100, sourceModified: 1, kind: .s3, target: "b/a", partSize: 50))
            func piece(_ number: Int, owner: String) throws -> UploadHandOffPiece {
                let body = uploads.appendingPathComponent("a-\(number).part")
                try Data(repeating: 1, count: 50).write(to: body)
                return UploadHandOffPiece(uploadId: "put:a", number: number, offset: Int64(number - 1) * 50, size: 50, md5: "", sha256: "",
                                          bodyPath: body.path, ownsBody: true, owner: LeaseOwner(id: owner))
            }
            let another = try piece(1, owner: "another-host:42:abcd")                            // may be alive: left alone
            let dead = try piece(2, owner: "\(ProcessLiveness.system.hostName):999999999:dead")  // certainly gone
            #expect(try await d.database.handOffUploadPieces([another, dead]))
            try Data("stray".utf8).write(to: uploads.appendingPathComponent("stray.part"))

            let bt = BackgroundTransfers(downloader: d, stashDirectory: stash)
            try await bt.recoverUploads()
            bt.invalidate()
            await d.shutdown()
            #expect(try await d.database.uploadHandOffPieces().map(\.number) == [1])
            #expect(try await d.database.upload(id: "put:a")?.parts.isEmpty == true)   // nothing confirmed by a task that is gone
            let left = Set(try FileManager.default.contentsOfDirectory(atPath: uploads.path))
            #expect(left == ["a-1.part"], "\(left)")
        }
    }
}
