import Courier
import Foundation

/// Whether a persisted upload may go on, or must start again (pure).
///
/// An upload goes on only when it is the same upload (protocol, target, part size) of the
/// same file (size and modification time), and the server handle exists. The bytes already
/// confirmed are checked again by hash where the protocol allows (``MultipartPlan``).
public enum UploadResume: Equatable, Sendable {
    /// Go on with the server's upload `remoteId`.
    case resume(remoteId: String)
    /// Start a new upload; `reason` says why (logged), `abandon` is a server upload to
    /// abort or terminate first, when there is one.
    case restart(reason: String, abandon: String?)

    /// The decision for `record` (nil: never started) and the file as it is now.
    public static func decide(record: UploadRecord?, source: UploadSource, kind: UploadProtocol, target: String, partSize: Int64) -> UploadResume {
        guard let record else { return .restart(reason: "a new upload", abandon: nil) }
        let old = record.remoteId
        guard let remoteId = old else { return .restart(reason: "the earlier run ended before the server's upload existed", abandon: nil) }
        if record.kind != kind || record.target != target { return .restart(reason: "the upload now goes elsewhere", abandon: old) }
        // An S3 upload's parts are numbered by size; a tus server holds bytes, whatever the chunks.
        if kind == .s3, record.partSize != partSize { return .restart(reason: "the part size changed", abandon: old) }
        if record.sourceSize != source.size || record.sourceModified != source.modified {
            return .restart(reason: "\(source.url.lastPathComponent) changed since the upload began", abandon: old)
        }
        return .resume(remoteId: remoteId)
    }
}

/// An S3 multipart upload's parts, and which still go up after a relaunch (pure).
public enum MultipartPlan {
    /// One part: its 1-based number and its bytes in the file.
    public struct Part: Equatable, Sendable {
        /// The 1-based part number.
        public let number: Int
        /// Where the part's bytes begin in the file.
        public let offset: Int64
        /// How many bytes the part holds.
        public let length: Int64
    }

    /// A part as `ListParts` reports it.
    public struct Listed: Equatable, Sendable {
        /// The 1-based part number.
        public let number: Int
        /// How many bytes the server holds for the part.
        public let size: Int64
        /// The part's ETag as the server listed it.
        public let etag: String
        /// Makes one.
        public init(number: Int, size: Int64, etag: String) {
            self.number = number
            self.size = size
            self.etag = etag
        }
    }

    /// What to do after comparing the server's parts with the file.
    public enum Outcome: Equatable, Sendable {
        /// Send these parts; the others the server holds as the file has them.
        case send([Part], held: [Listed])
        /// The file's bytes differ from a part already sent: start a new upload.
        case restart(reason: String)
    }

    /// The parts of a file of `size` bytes, `partSize` each (the last one shorter); one
    /// empty part for an empty file.
    public static func parts(size: Int64, partSize: Int64) -> [Part] {
        precondition(partSize > 0)
        if size == 0 { return [Part(number: 1, offset: 0, length: 0)] }
        return stride(from: Int64(0), to: size, by: Int(partSize)).enumerated().map {
            Part(number: $0.offset + 1, offset: $0.element, length: min(partSize, size - $0.element))
        }
    }

    /// The parts still to send. `recorded` are the parts this side saw confirmed (with the
    /// MD5 of what it sent), `listed` what the server holds, `localMD5` the MD5 of the file's
    /// bytes now, for every part number in either. A recorded part whose bytes changed means
    /// a changed file (restart); a listed part counts as held when its size is the planned one
    /// and its ETag is the file's MD5 there (or the ETag recorded for the same bytes, for
    /// servers whose ETags are not MD5s); every other planned part is sent.
    public static func decide(planned: [Part], recorded: [UploadPart], listed: [Listed], localMD5: [Int: String]) -> Outcome {
        for part in recorded where localMD5[part.number] != part.md5 {
            return .restart(reason: "the file's bytes of part \(part.number) are not the ones sent")
        }
        let recordedByNumber = Dictionary(recorded.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        let listedByNumber = Dictionary(listed.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        var send: [Part] = [], held: [Listed] = []
        for part in planned {
            guard let server = listedByNumber[part.number], server.size == part.length, let local = localMD5[part.number] else {
                send.append(part)
                continue
            }
            let sameAsRecorded = recordedByNumber[part.number].map { $0.etag == server.etag && $0.md5 == local } ?? false
            if normalizedETag(server.etag) == local || sameAsRecorded { held.append(server) } else { send.append(part) }
        }
        return .send(send, held: held)
    }

    /// An ETag without quotes (or their XML escape), lowercased.
    public static func normalizedETag(_ etag: String) -> String { UploadPieceReply.normalizedETag(etag) }
}
