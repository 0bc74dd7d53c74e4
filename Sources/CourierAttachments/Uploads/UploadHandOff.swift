import Courier
import Crypto
import Foundation

/// An upload that can be handed to the system while the app is suspended: what it has not
/// sent (S3 parts, the rest of a tus upload) becomes upload tasks from files, recorded in
/// the journal's store (`UploadHandOffPiece`) before they exist. Called once the upload's
/// own run has stopped; its next run (after the tasks ended) sends only what the server
/// does not hold, and completes.
public protocol UploadHandingOff: Sendable {
    /// The requests for what upload `journal.id` of `file` (as `attachment`) has not sent;
    /// each piece's body is written under `folder` (synced) and recorded before this
    /// returns. An upload that has not begun is begun here (the server's handle made and
    /// recorded), so the system sends all of it. Empty when nothing can be handed off: a
    /// file small enough for one request, or one changed since its upload began (its next
    /// run starts it again).
    func handOffRemainder(of file: URL, attachment: Attachment, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest]
}

/// A piece's body: a copy of the source's bytes written beside the other pieces, synced,
/// with the digests of exactly those bytes.
enum UploadPieceFile {
    static func write(_ source: UploadSource, offset: Int64, length: Int64, to url: URL) throws -> (md5: String, sha256: String, md5Data: Data, sha256Data: Data) {
        try Durability.createFolder(url.deletingLastPathComponent())
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let output = FileHandle(forWritingAtPath: url.path) else {
            throw CourierError(.writeFailed, "cannot write \(url.path) for the hand-off")
        }
        let digests: (md5: Data, sha256: Data)
        do {
            digests = try hashing(source, offset: offset, length: length) { try output.write(contentsOf: $0) }
            try Durability.sync(output)
            try output.close()
        } catch let error as CourierError {
            try? output.close()   // the piece failed already; its error is the one to report
            throw error
        } catch {
            try? output.close()   // the piece failed already; its error is the one to report
            throw CourierError(.writeFailed, "cannot write \(url.path) for the hand-off", underlying: error)
        }
        return (SHA256Hex.hex(digests.md5), SHA256Hex.hex(digests.sha256), digests.md5, digests.sha256)
    }

    /// The digests of a range of the source, read and not copied (a piece whose body is the
    /// source itself).
    static func digests(_ source: UploadSource, offset: Int64, length: Int64) throws -> (md5: String, sha256: String) {
        let digests = try hashing(source, offset: offset, length: length) { _ in }
        return (SHA256Hex.hex(digests.md5), SHA256Hex.hex(digests.sha256))
    }

    /// Reads the range in 1 MiB slices, hashing each and handing it to `each`.
    private static func hashing(_ source: UploadSource, offset: Int64, length: Int64, _ each: (Data) throws -> Void) throws -> (md5: Data, sha256: Data) {
        guard let input = FileHandle(forReadingAtPath: source.url.path) else {
            throw CourierError(.fileNotFound, "\(source.url.lastPathComponent) cannot be opened for the upload")
        }
        defer { try? input.close() }   // read-only: nothing to lose
        var md5 = Insecure.MD5(), sha256 = SHA256()
        try input.seek(toOffset: UInt64(offset))
        var left = length
        while left > 0 {
            let data = try input.read(upToCount: Int(min(left, 1 << 20))) ?? Data()
            guard !data.isEmpty else { throw UploadSource.Changed(source.url).error }
            md5.update(data: data)
            sha256.update(data: data)
            try each(data)
            left -= Int64(data.count)
        }
        return (Data(md5.finalize()), Data(sha256.finalize()))
    }

    /// Where piece `number` of upload `id` is written.
    /// The rest of a file from `offset`, as one piece: the file itself when nothing was sent
    /// yet (no copy), else a copy of the rest in `folder`.
    static func rest(of source: UploadSource, from offset: Int64, number: Int, journal: UploadJournal, folder: URL) throws -> UploadHandOffPiece {
        let length = source.size - offset
        if offset == 0 {
            let digests = try digests(source, offset: 0, length: length)
            return UploadHandOffPiece(uploadId: journal.id, number: number, offset: 0, size: length, md5: digests.md5, sha256: digests.sha256,
                                      bodyPath: source.url.path, ownsBody: false, owner: journal.owner)
        }
        let body = url(in: folder, uploadId: journal.id, number: number)
        let digests = try write(source, offset: offset, length: length, to: body)
        return UploadHandOffPiece(uploadId: journal.id, number: number, offset: offset, size: length, md5: digests.md5, sha256: digests.sha256,
                                  bodyPath: body.path, ownsBody: true, owner: journal.owner)
    }

    static func url(in folder: URL, uploadId: String, number: Int) -> URL {
        folder.appendingPathComponent(SHA256Hex.shortID("upload", of: uploadId, bytes: 12) + "-\(number).part")
    }
}

extension S3RemoteStorage: UploadHandingOff {
    /// The parts the upload has not recorded, each written to a file of its own and asked
    /// for with a presigned `UploadPart` URL (valid for 7 days, S3's longest: the system may
    /// send a task hours later; with temporary credentials, only as long as their session
    /// token, after which the server refuses the part and the upload's next run sends it)
    /// that signs the part's `Content-MD5` and SHA-256, so the server takes only these bytes
    /// under that number.
    public func handOffRemainder(of file: URL, attachment: Attachment, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        let db = journal.database
        let key = try key(for: attachment)
        let target = "\(configuration.bucket)/\(key)"
        let source = try UploadSource(url: file)
        let partSize = partSize(forSize: source.size)
        guard source.size > configuration.multipartThreshold else { return [] }
        var existing = try await db.upload(id: journal.id)
        if existing?.record.remoteId == nil {
            // Not begun: begun here, so every part goes to the system.
            try await abortUnrecordedUploads(of: existing?.record, key: key, target: target, database: db)
            try await db.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size, sourceModified: source.modified,
                                                  kind: .s3, target: target, partSize: partSize))
            let headers = (attachment.mediaType.map { [("Content-Type", $0)] } ?? []) + [("x-amz-checksum-algorithm", "SHA256")]
            try await db.noteUploadHandle(id: journal.id, remoteId: try await createMultipart(key: key, headers: headers))
            existing = try await db.upload(id: journal.id)
        }
        guard let existing, existing.record.kind == .s3, let uploadID = existing.record.remoteId,
              case .resume = UploadResume.decide(record: existing.record, source: source, kind: .s3, target: target, partSize: partSize)
        else { return [] }
        let planned = MultipartPlan.parts(size: source.size, partSize: partSize)
        var taken = Set(existing.parts.map(\.number)).union(try await db.uploadHandOffPieces(uploadId: journal.id).map(\.number))
        // A part the server took while the stopped run could not record it is recorded now
        // (its ETag is the file's MD5 there), never sent again. Gone: the next run starts over.
        guard let listed = try await listParts(key: key, uploadID: uploadID) else { return [] }
        for part in listed where !taken.contains(part.number) && part.number >= 1 && part.number <= planned.count && planned[part.number - 1].length == part.size {
            let chunk = try source.hash(offset: planned[part.number - 1].offset, length: part.size)
            guard MultipartPlan.normalizedETag(part.etag) == chunk.md5Hex else { continue }
            try await db.noteUploadPart(UploadPart(uploadId: journal.id, number: part.number, offset: chunk.offset, size: part.size, etag: part.etag,
                                                   md5: chunk.md5Hex, sha256: chunk.sha256Hex))
            taken.insert(part.number)
        }
        var requests: [UploadTaskRequest] = []
        for part in planned where !taken.contains(part.number) {
            let body = UploadPieceFile.url(in: folder, uploadId: journal.id, number: part.number)
            let digests = try UploadPieceFile.write(source, offset: part.offset, length: part.length, to: body)
            let piece = UploadHandOffPiece(uploadId: journal.id, number: part.number, offset: part.offset, size: part.length,
                                           md5: digests.md5, sha256: digests.sha256, bodyPath: body.path, ownsBody: true, owner: journal.owner)
            let headers = [("Content-MD5", digests.md5Data.base64EncodedString()), ("x-amz-checksum-sha256", digests.sha256Data.base64EncodedString())]
            let query = "partNumber=\(part.number)&uploadId=\(SigV4Signer.uriEncode(uploadID))"
            let url = signer.presign(method: "PUT", url: try objectURL(key: key, query: query), expires: 7 * 24 * 3600, headers: headers)
            requests.append(UploadTaskRequest(piece: piece, kind: .s3, method: "PUT", url: url.absoluteString, headers: headers.map { (name: $0.0, value: $0.1) }))
        }
        return try await UploadPieceFile.record(requests, folder: folder, db)
    }
}

extension TusRemoteStorage: UploadHandingOff {
    public func handOffRemainder(of file: URL, attachment: Attachment, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        try await uploader.handOffRemainder(of: file, metadata: Self.metadata(file, attachment), journal: journal, folder: folder)
    }
}

extension TusUploader {
    /// The rest of the upload from the server's offset, as one `PATCH` whose body is the
    /// source file itself when nothing was sent yet (tus's offset is then 0: no copy), else
    /// a copy of the rest. An upload that has not begun is created here (`metadata` goes with
    /// the creation).
    public func handOffRemainder(of file: URL, metadata: [String: String], journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        let db = journal.database
        let source = try UploadSource(url: file)
        guard source.size > 0, try await db.uploadHandOffPieces(uploadId: journal.id).isEmpty else { return [] }
        var existing = try await db.upload(id: journal.id)
        if existing?.record.remoteId == nil {
            try await db.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size, sourceModified: source.modified,
                                                  kind: .tus, target: endpoint.absoluteString, partSize: chunkSize))
            try await db.noteUploadHandle(id: journal.id, remoteId: try await create(size: source.size, metadata: metadata).absoluteString)
            existing = try await db.upload(id: journal.id)
        }
        guard let existing, existing.record.kind == .tus, let remote = existing.record.remoteId, let url = URL(string: remote),
              case .resume = UploadResume.decide(record: existing.record, source: source, kind: .tus, target: endpoint.absoluteString, partSize: chunkSize),
              try Self.changedChunk(existing.parts, source) == nil,
              let offset = try await serverOffset(url, size: source.size), offset < source.size else { return [] }
        let piece = try UploadPieceFile.rest(of: source, from: offset, number: (existing.parts.map(\.number).max() ?? 0) + 1, journal: journal, folder: folder)
        let credentials = requestHeaders(for: url)
        let headers = credentials + [(name: "Tus-Resumable", value: TusHeaders.version), (name: "Upload-Offset", value: String(offset)),
                                     (name: "Content-Type", value: "application/offset+octet-stream")]
        return try await UploadPieceFile.record([UploadTaskRequest(piece: piece, kind: .tus, method: "PATCH", url: url.absoluteString, headers: headers,
                                                                   carriesCredentials: !credentials.isEmpty)], folder: folder, db)
    }
}

extension UploadPieceFile {
    /// Syncs the folder (the pieces' names), then records the pieces in one transaction;
    /// when the upload's record is gone meanwhile, deletes the copies and hands off nothing.
    static func record(_ requests: [UploadTaskRequest], folder: URL, _ db: CourierDatabase) async throws -> [UploadTaskRequest] {
        guard !requests.isEmpty else { return [] }
        if requests.contains(where: \.piece.ownsBody) { try Durability.syncFolder(folder) }
        if try await db.handOffUploadPieces(requests.map(\.piece)) { return requests }
        for request in requests where request.piece.ownsBody { unlink(request.piece.bodyPath) }
        return []
    }
}
