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

    /// The digests of a byte range of the file (a part or chunk), read 256 KiB at a time:
    /// the range itself is never held. The request then sends the same range from the file
    /// (``UploadChunk/body``); a write in between changes the file's modification time,
    /// which ``checkUnchanged()`` sees before the part is recorded, and S3's ETag or tus's
    /// checksum would tell the bytes apart.
    func hash(offset: Int64, length: Int64, sha1 wantsSHA1: Bool = false) throws -> UploadChunk {
        let handle = try open()
        defer { try? handle.close() }   // a read-only handle: closing loses nothing
        var md5 = Insecure.MD5(), sha256 = SHA256(), sha1 = Insecure.SHA1()
        // One buffer for the whole pass, read into with pread: no allocation per slice, so
        // the heap does not fragment under four parts at once.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(Self.hashSlice), alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while position < offset + length {
            let want = Int(min(offset + length - position, Self.hashSlice))
            let got = pread(handle.fileDescriptor, buffer.baseAddress, want, off_t(position))
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else {
                throw CourierError(.readFailed, "cannot read \(url.lastPathComponent) for the upload: \(String(cString: strerror(errno)))")
            }
            guard got > 0 else { throw Changed(url) }   // shorter than when looked at
            let slice = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            md5.update(bufferPointer: slice)
            sha256.update(bufferPointer: slice)
            if wantsSHA1 { sha1.update(bufferPointer: slice) }
            position += Int64(got)
        }
        return UploadChunk(body: .file(url, offset: offset, length: length), offset: offset, length: length, md5: Data(md5.finalize()),
                           sha256: Data(sha256.finalize()), sha1: wantsSHA1 ? Data(sha1.finalize()) : nil)
    }

    /// A byte range read whole, with the digests of exactly those bytes, sent from memory:
    /// for a request whose bytes nothing else checks before they become the object (an S3
    /// single PUT, at most the multipart threshold; the tus chunk that completes a file on a
    /// server without the checksum extension). The caller's ``checkUnchanged()`` after this
    /// read then vouches for exactly what is sent.
    func read(offset: Int64, length: Int64, sha1 wantsSHA1: Bool = false) throws -> UploadChunk {
        let handle = try open()
        defer { try? handle.close() }   // a read-only handle: closing loses nothing
        let data: Data
        do {
            try handle.seek(toOffset: UInt64(offset))
            data = try handle.read(upToCount: Int(length)) ?? Data()
        } catch {
            throw CourierError(.readFailed, "cannot read \(url.lastPathComponent) for the upload", underlying: error)
        }
        guard Int64(data.count) == length else { throw Changed(url) }
        return UploadChunk(body: .bytes(data), offset: offset, length: length, md5: Data(Insecure.MD5.hash(data: data)),
                           sha256: Data(SHA256.hash(data: data)), sha1: wantsSHA1 ? Data(Insecure.SHA1.hash(data: data)) : nil)
    }

    private func open() throws -> FileHandle {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CourierError(.fileNotFound, "\(url.lastPathComponent) cannot be opened for the upload")
        }
        return handle
    }

    /// How much of the file a digest pass reads at a time.
    static let hashSlice: Int64 = 256 << 10
}

/// A byte range of the source about to be sent, and its digests, each computed once; the
/// bytes stay in the file until the transport streams them (``body``), unless they were
/// read whole (``UploadSource/read(offset:length:sha1:)``).
struct UploadChunk: Sendable {
    /// The request body: the range, read from the file in bounded slices as it goes, or
    /// the bytes read whole.
    let body: TransportRequestBody
    let offset: Int64
    let length: Int64
    let md5: Data
    let sha256: Data
    /// For tus's checksum extension, when the server offers it.
    let sha1: Data?

    var md5Hex: String { SHA256Hex.hex(md5) }
    var md5Base64: String { md5.base64EncodedString() }
    var sha256Hex: String { SHA256Hex.hex(sha256) }
}
