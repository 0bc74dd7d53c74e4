import Courier
import Crypto
import Foundation

/// The file an upload reads, as it was when looked at: a changed size or modification time
/// between two runs means a new file, so the upload starts again (``UploadResume``).
public struct UploadSource: Sendable, Equatable {

    /// The file (absolute, standardized).
    public let url: URL
    /// Its size in bytes.
    public let size: Int64
    /// Its modification time, seconds since 1970 (sub-second where the file system keeps it).
    public let modified: Double

    /// Looks at `url`; `E_FILE_NOT_FOUND` when it is not a readable regular file.
    public init(url: URL) throws {
        let url = url.standardizedFileURL
        // FileManager, not stat(2): the field names differ between Darwin and Glibc.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),   // the else branch reports the file as missing
              attributes[.type] as? FileAttributeType == .typeRegular,
              let size = (attributes[.size] as? NSNumber)?.int64Value, let modified = attributes[.modificationDate] as? Date else {
            throw CourierError(.fileNotFound, "\(url.path) is not a file that can be uploaded")
        }
        self.url = url
        self.size = size
        self.modified = modified.timeIntervalSince1970
    }

    /// The file changed while it was being uploaded: what went up is not one version of it.
    struct Changed: Error {
        let error: CourierError
        init(_ url: URL) {
            error = CourierError(.sourceChanged, "\(url.lastPathComponent) changed while it was being uploaded")
        }
    }

    /// Throws ``Changed`` unless the file still has the size and modification time it had
    /// when looked at: called before a part is recorded and before the upload completes.
    func checkUnchanged() throws {
        guard let now = try? UploadSource(url: url), now.size == size, now.modified == modified else { throw Changed(url) }   // a file that is gone has changed too
    }

    /// A byte range of the file, read whole (a part or chunk, at most a few MiB), with the
    /// digests of exactly these bytes: what is hashed is what is sent.
    func read(offset: Int64, length: Int64) throws -> UploadChunk {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CourierError(.fileNotFound, "\(url.lastPathComponent) cannot be opened for the upload")
        }
        defer { try? handle.close() }   // a read-only handle: closing loses nothing
        do {
            try handle.seek(toOffset: UInt64(offset))
            let data = try handle.read(upToCount: Int(length)) ?? Data()
            guard Int64(data.count) == length else { throw Changed(url) }
            return UploadChunk(offset: offset, data: data)
        } catch let error as CourierError {
            throw error
        } catch let error as Changed {
            throw error
        } catch {
            throw CourierError(.readFailed, "cannot read \(url.lastPathComponent) for the upload", underlying: error)
        }
    }
}

/// Bytes of the source about to be sent, and their digests, each computed once.
struct UploadChunk: Sendable {
    let offset: Int64
    let data: Data
    let md5: Data
    let sha256: Data

    init(offset: Int64, data: Data) {
        self.offset = offset
        self.data = data
        md5 = Data(Insecure.MD5.hash(data: data))
        sha256 = Data(SHA256.hash(data: data))
    }

    var length: Int64 { Int64(data.count) }
    var md5Hex: String { SHA256Hex.hex(md5) }
    var md5Base64: String { md5.base64EncodedString() }
    var sha256Hex: String { SHA256Hex.hex(sha256) }
    /// For tus's checksum extension (computed when asked: S3 does not use it).
    var sha1Base64: String { Data(Insecure.SHA1.hash(data: data)).base64EncodedString() }
}
