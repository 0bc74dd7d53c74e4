import Courier
import Crypto
import Foundation
import Logging

/// S3 uploads that go on where they stopped: the upload id and each part the server
/// confirmed are in the journal's record, so a relaunch asks `ListParts`, sends only the
/// parts the server does not hold as the file has them (several at once), and completes.
extension S3RemoteStorage: ResumableUploadStorage {
    /// Uploads the file, resuming the journal's upload when it is the same file and key.
    public func upload(fileAt file: URL, attachment: Attachment, journal: UploadJournal) async throws {
        _ = try await upload(fileAt: file, attachment: attachment, precondition: .none, journal: journal)
    }

    /// Uploads the file under a precondition, resuming the journal's upload when it is the
    /// same file and key: one PUT up to ``S3Configuration/multipartThreshold``, a multipart
    /// upload past it (created with the SHA-256 checksum algorithm). Every part carries
    /// `Content-MD5`, `x-amz-checksum-sha256` and its signed SHA-256, S3 checks all three, and a reply
    /// whose ETag is not the part's MD5 fails with `E_CHECKSUM_MISMATCH`. A 412 is
    /// `E_CONFLICT`. A file that changes while it goes up is uploaded again from the start
    /// (once; a second change fails with `E_READ`). Returns the new ETag; the record is
    /// deleted once the object is there.
    public func upload(fileAt file: URL, attachment: Attachment, precondition: UploadPrecondition, journal: UploadJournal) async throws -> String? {
        let key = try key(for: attachment)
        try await journal.checkNotHandedOff()
        var headers: [(String, String)] = []
        if let type = attachment.mediaType { headers.append(("Content-Type", type)) }
        var attempt = 0
        while true {
            attempt += 1
            let source = try UploadSource(url: file)
            do {
                if source.size <= configuration.multipartThreshold {
                    let etag = try await putWhole(source, key: key, headers: headers, precondition: precondition, journal: journal)
                    try await journal.database.deleteUpload(id: journal.id)
                    return etag
                }
                // Checked before any part is sent (no bandwidth spent on a conflict), and again
                // by S3 itself on CompleteMultipartUpload, which is what makes it atomic.
                try precondition.check(current: try await version(of: attachment), key)
                return try await multipart(source, key: key, headers: headers, precondition: precondition, journal: journal)
            } catch let error as CourierError where error.code == .remoteNotFound && attempt == 1 {
                // The upload vanished under us (aborted by a sweep, expired): once more, from zero.
                logger.notice("starting \(key) again: \(error.message)")
                try await journal.database.deleteUpload(id: journal.id)
            } catch let changed as UploadSource.Changed {
                if let uploadID = try await journal.database.upload(id: journal.id)?.record.remoteId {
                    await abortQuietly(key: key, uploadID: uploadID)
                }
                try await journal.database.deleteUpload(id: journal.id)
                guard attempt == 1 else { throw changed.error }
                logger.notice("starting \(key) again: \(changed.error.message)")
            }
        }
    }

    private func putWhole(_ source: UploadSource, key: String, headers: [(String, String)], precondition: UploadPrecondition,
                          journal: UploadJournal) async throws -> String? {
        // Read whole (at most the multipart threshold): an S3-compatible server that checks
        // neither Content-MD5 nor the payload hash would otherwise store a rewrite's mix.
        let chunk = try source.read(offset: 0, length: source.size)
        let counter = UploadCounter(journal: journal, total: source.size, held: 0)
        let tally = RequestTally(counter)
        let response = try await send(.put, objectURL(key: key),
                                      headers: headers + [("Content-Length", String(chunk.length)), ("Content-MD5", chunk.md5Base64),
                                                          ("x-amz-checksum-sha256", chunk.sha256.base64EncodedString())] + (precondition.header.map { [$0] } ?? []),
                                      payloadHash: chunk.sha256Hex, body: chunk.body, observer: tally)
        let text = try await HTTPCalls.text(response)
        if response.status == 412 { throw precondition.conflict(key) }
        try source.checkUnchanged()   // before judging the reply: see sendPart
        guard response.status == 200 else { throw HTTPCalls.failure("upload of \(key)", response, text) }
        let etag = response.headerFields.first(name: "ETag")
        try Self.checkPartETag(etag, response.headerFields, md5Hex: chunk.md5Hex, key)
        counter.confirmed(chunk.length)
        return etag
    }

    /// The part size for a file: the configured one within S3's limits (5 MiB to 5 GiB),
    /// grown so that no file needs more than 10,000 parts (the same for the same file, so a
    /// resume plans the same parts).
    func partSize(forSize size: Int64) -> Int64 {
        let configured = min(max(configuration.partSize, 5 << 20), 5 << 30)
        return max(configured, (size + 9_999) / 10_000)
    }

    private func multipart(_ source: UploadSource, key: String, headers: [(String, String)], precondition: UploadPrecondition,
                           journal: UploadJournal) async throws -> String? {
        let db = journal.database
        let partSize = partSize(forSize: source.size)
        let planned = MultipartPlan.parts(size: source.size, partSize: partSize)
        let target = "\(configuration.bucket)/\(key)"
        let existing = try await db.upload(id: journal.id)
        var uploadID: String?
        var toSend = planned
        var held: [MultipartPlan.Listed] = []
        var heldSHA256: [Int: Data] = [:]
        switch UploadResume.decide(record: existing?.record, source: source, kind: .s3, target: target, partSize: partSize) {
        case .resume(let id):
            let recorded = existing?.parts ?? []
            guard let listed = try await listParts(key: key, uploadID: id) else {
                // Gone: completed by a run killed before it could forget the record, or aborted.
                if let etag = try await completedAlready(key: key, planned: planned, recorded: recorded) {
                    try await db.deleteUpload(id: journal.id)
                    return etag
                }
                logger.notice("starting \(key) again: the server no longer has upload \(id)")
                break
            }
            let wanted = Set(listed.map(\.number)).union(recorded.map(\.number))
            var local: [Int: (md5: String, sha256: Data)] = [:]
            for part in planned where wanted.contains(part.number) {
                let chunk = try source.hash(offset: part.offset, length: part.length)
                local[part.number] = (chunk.md5Hex, chunk.sha256)
            }
            switch MultipartPlan.decide(planned: planned, recorded: recorded, listed: listed, localMD5: local.mapValues(\.md5)) {
            case let .send(parts, heldParts):
                uploadID = id
                toSend = parts
                held = heldParts
                heldSHA256 = local.mapValues(\.sha256)
                for part in heldParts where !recorded.contains(where: { $0.number == part.number && $0.etag == part.etag }) {
                    let p = planned[part.number - 1]
                    try await db.noteUploadPart(UploadPart(uploadId: journal.id, number: p.number, offset: p.offset, size: p.length,
                                                           etag: part.etag, md5: local[p.number]?.md5 ?? "", sha256: local[p.number].map { SHA256Hex.hex($0.sha256) } ?? ""))
                }
            case .restart(let reason):
                logger.notice("starting \(key) again: \(reason)")
                await abortQuietly(key: key, uploadID: id)
            }
        case let .restart(reason, abandon):
            if let abandon {
                logger.notice("starting \(key) again: \(reason)")
                await abortQuietly(key: key, uploadID: abandon)
            } else {
                try await abortUnrecordedUploads(of: existing?.record, key: key, target: target, database: db)
            }
        }
        if uploadID == nil {
            try await db.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size, sourceModified: source.modified,
                                                  kind: .s3, target: target, partSize: partSize))
            let id = try await createMultipart(key: key, headers: headers + [("x-amz-checksum-algorithm", "SHA256")])
            try await db.noteUploadHandle(id: journal.id, remoteId: id)
            uploadID = id
        }
        let id = uploadID!
        let counter = UploadCounter(journal: journal, total: source.size, held: held.reduce(0) { $0 + $1.size })
        var etags = Dictionary(held.map { ($0.number, CompletedPart(etag: $0.etag, sha256: heldSHA256[$0.number])) }, uniquingKeysWith: { $1 })
        let width = max(1, configuration.uploadConcurrency)
        try await withThrowingTaskGroup(of: (Int, CompletedPart).self) { group in
            var next = toSend.makeIterator()
            for _ in 0..<width { if let part = next.next() { group.addTask { try await self.sendPart(part, source, key, id, journal, counter) } } }
            while let (number, etag) = try await group.next() {
                etags[number] = etag
                if let part = next.next() { group.addTask { try await self.sendPart(part, source, key, id, journal, counter) } }
            }
        }
        try source.checkUnchanged()   // the last look before the parts become the object
        let etag = try await complete(key: key, uploadID: id, etags: etags, precondition: precondition)
        try await db.deleteUpload(id: journal.id)
        return etag
    }

    /// One part: read, hashed, sent with its digests, its ETag checked, then recorded
    /// (only while the file is still the one the upload began with).
    /// A passing failure (5xx, timeout, a dropped connection) is tried again, twice.
    private func sendPart(_ part: MultipartPlan.Part, _ source: UploadSource, _ key: String, _ uploadID: String,
                          _ journal: UploadJournal, _ counter: UploadCounter) async throws -> (Int, CompletedPart) {
        let chunk = try source.hash(offset: part.offset, length: part.length)
        let query = "partNumber=\(part.number)&uploadId=\(SigV4Signer.uriEncode(uploadID))"
        var attempt = 0
        while true {
            attempt += 1
            let tally = RequestTally(counter)
            do {
                let response = try await send(.put, objectURL(key: key, query: query),
                                              headers: [("Content-Length", String(chunk.length)), ("Content-MD5", chunk.md5Base64),
                                                        ("x-amz-checksum-sha256", chunk.sha256.base64EncodedString())],
                                              payloadHash: chunk.sha256Hex, body: chunk.body, observer: tally)
                let text = try await HTTPCalls.text(response)
                // The file first: a part refused for its digests (400 BadDigest), or whose ETag is
                // not the MD5 of the pass before it went, is a file written while it was sent.
                try source.checkUnchanged()
                guard response.status == 200, let etag = response.headerFields.first(name: "ETag") else {
                    throw HTTPCalls.failure("part \(part.number) of \(key)", response, text)
                }
                try Self.checkPartETag(etag, response.headerFields, md5Hex: chunk.md5Hex, "part \(part.number) of \(key)")
                try await journal.database.noteUploadPart(UploadPart(uploadId: journal.id, number: part.number, offset: part.offset, size: part.length,
                                                                     etag: etag, md5: chunk.md5Hex, sha256: chunk.sha256Hex))
                counter.confirmed(chunk.length)
                return (part.number, CompletedPart(etag: etag, sha256: chunk.sha256))
            } catch let error as CourierError where attempt < 3 && error.isPassing {
                tally.takeBack()
                try await Task.sleep(for: .milliseconds(250 * attempt))
            } catch {
                tally.takeBack()
                throw error
            }
        }
    }

    /// The part's ETag must be the MD5 of what was sent (`UploadPieceReply`, the one rule).
    static func checkPartETag(_ etag: String?, _ headers: HTTPFields, md5Hex: String, _ what: String) throws {
        if let mismatch = UploadPieceReply.partETagMismatch(etag, headers: headers, md5Hex: md5Hex) {
            throw CourierError(.checksumMismatch, "\(what): \(mismatch)")
        }
    }

    /// The object's ETag when it is this very upload, completed: a multipart ETag is the MD5
    /// of the parts' MD5s, then `-<parts>`. `nil` when the object is absent or another one.
    /// Every part was recorded, so the killed run may have sent `CompleteMultipartUpload`,
    /// which the server may still be carrying out (its upload already gone from `ListParts`,
    /// its object not there yet): an absent object is asked for again for up to
    /// `completionWait` before the upload starts over.
    private func completedAlready(key: String, planned: [MultipartPlan.Part], recorded: [UploadPart],
                                  completionWait: Duration = .seconds(30)) async throws -> String? {
        let byNumber = Dictionary(recorded.map { ($0.number, $0.md5) }, uniquingKeysWith: { $1 })
        var digests = Data()
        for part in planned {
            guard let md5 = byNumber[part.number], md5.count == 32 else { return nil }
            digests.append(contentsOf: stride(from: 0, to: 32, by: 2).compactMap { UInt8(md5.dropFirst($0).prefix(2), radix: 16) })
        }
        let expected = SHA256Hex.hex(Insecure.MD5.hash(data: digests)) + "-\(planned.count)"
        let deadline = ContinuousClock.now + completionWait
        var pause = Duration.milliseconds(200)
        while true {
            let response = try await send(.head, objectURL(key: key), timeout: .seconds(60))
            if response.status == 200 {
                guard let etag = response.headerFields.first(name: "ETag"), MultipartPlan.normalizedETag(etag) == expected else { return nil }
                return etag
            }
            guard response.status == 404, ContinuousClock.now + pause < deadline else { return nil }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(2))
        }
    }
}
