import HTTPTypes
import Testing
@testable import CourierCore

/// What a reply to a handed-off upload piece confirms: the rule an engine-sent part and a
/// background task's part share.
struct UploadPieceReplyTests {
    let piece = UploadHandOffPiece(uploadId: "put:x", number: 3, offset: 100, size: 50, md5: "0123456789abcdef0123456789abcdef",
                                   sha256: "", bodyPath: "/tmp/p", ownsBody: true, owner: nil)

    @Test func anS3PartIsConfirmedOnlyBy200WithItsOwnMD5AsETag() {
        #expect(UploadPieceReply.judge(.s3, piece: piece, status: 200, headers: [.eTag: "\"0123456789ABCDEF0123456789ABCDEF\""])
                == .confirmed(etag: "\"0123456789ABCDEF0123456789ABCDEF\"", offset: nil))
        guard case .notConfirmed = UploadPieceReply.judge(.s3, piece: piece, status: 200, headers: [.eTag: "\"ffffffffffffffffffffffffffffffff\""]) else {
            Issue.record("another part's ETag was taken"); return
        }
        guard case .notConfirmed = UploadPieceReply.judge(.s3, piece: piece, status: 403, headers: [.eTag: "\"0123456789abcdef0123456789abcdef\""]) else {
            Issue.record("a 403 was taken"); return
        }
        guard case .notConfirmed = UploadPieceReply.judge(.s3, piece: piece, status: 200, headers: [:]) else {
            Issue.record("a 200 without ETag was taken"); return
        }
        // KMS: the ETag is not an MD5; S3 checked Content-MD5 itself.
        let kms: HTTPFields = [.eTag: "\"ffffffffffffffffffffffffffffffff\"", HTTPField.Name("x-amz-server-side-encryption")!: "aws:kms"]
        #expect(UploadPieceReply.judge(.s3, piece: piece, status: 200, headers: kms) == .confirmed(etag: "\"ffffffffffffffffffffffffffffffff\"", offset: nil))
    }

    @Test func aTusChunkIsConfirmedOnlyWhenTheServerHoldsItWhole() {
        let offset = HTTPField.Name("Upload-Offset")!
        #expect(UploadPieceReply.judge(.tus, piece: piece, status: 204, headers: [offset: "150"]) == .confirmed(etag: nil, offset: 150))
        for (status, value) in [(204, "120"), (204, "151"), (204, "-1"), (204, "1e2"), (409, "150"), (460, "150"), (204, "")] {
            guard case .notConfirmed = UploadPieceReply.judge(.tus, piece: piece, status: status, headers: [offset: value]) else {
                Issue.record("\(status) with Upload-Offset \(value) was taken"); continue
            }
        }
    }
}
