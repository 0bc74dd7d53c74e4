import Courier
import Foundation

/// A part as `CompleteMultipartUpload` names it: its ETag and, for an upload created with
/// the SHA-256 checksum algorithm, its SHA-256 (S3 requires it then).
struct CompletedPart: Sendable {
    let etag: String
    let sha256: Data?
}

/// The multipart calls themselves: create, list parts, complete, abort, and the sweep of
/// uploads nobody will finish.
extension S3RemoteStorage {
    func createMultipart(key: String, headers: [(String, String)]) async throws -> String {
        let create = try await send(.post, objectURL(key: key, query: "uploads="), headers: headers)
        let text = try await HTTPCalls.text(create)
        guard create.status == 200, let uploadID = Self.xmlValue("UploadId", in: text) else {
            throw HTTPCalls.failure("starting a multipart upload of \(key)", create, text)
        }
        return Self.xmlUnescape(uploadID)
    }

    /// The parts the server holds for `uploadID`, every page; `nil` when the upload is gone
    /// (`NoSuchUpload`: completed, aborted or expired).
    func listParts(key: String, uploadID: String) async throws -> [MultipartPlan.Listed]? {
        var parts: [MultipartPlan.Listed] = []
        var marker: String?
        repeat {
            var query = "uploadId=\(SigV4Signer.uriEncode(uploadID))"
            if let marker { query = "part-number-marker=\(SigV4Signer.uriEncode(marker))&" + query }
            let response = try await send(.get, objectURL(key: key, query: query), timeout: .seconds(60))
            let text = try await HTTPCalls.text(response)
            if response.status == 404 { return nil }
            guard response.status == 200 else { throw HTTPCalls.failure("listing the parts of \(key)", response, text) }
            for block in Self.xmlBlocks("Part", in: text) {
                guard let number = Self.xmlValue("PartNumber", in: block).flatMap({ Int($0) }),
                      let size = Self.xmlValue("Size", in: block).flatMap({ Int64($0) }),
                      let etag = Self.xmlValue("ETag", in: block) else { continue }
                parts.append(MultipartPlan.Listed(number: number, size: size, etag: Self.xmlUnescape(etag)))
            }
            marker = Self.xmlValue("IsTruncated", in: text) == "true" ? Self.xmlValue("NextPartNumberMarker", in: text) : nil
        } while marker != nil
        return parts
    }

    /// `CompleteMultipartUpload` with every part's ETag, in order: S3 checks each against
    /// what it holds. A 404 (`NoSuchUpload`) is `E_REMOTE_NOT_FOUND`, so the caller can
    /// start again.
    func complete(key: String, uploadID: String, etags: [Int: CompletedPart], precondition: UploadPrecondition) async throws -> String? {
        let xml = "<CompleteMultipartUpload>" + etags.sorted { $0.key < $1.key }.map {
            "<Part><PartNumber>\($0.key)</PartNumber><ETag>\(Self.xmlEscape($0.value.etag))</ETag>"
                + ($0.value.sha256.map { "<ChecksumSHA256>\($0.base64EncodedString())</ChecksumSHA256>" } ?? "") + "</Part>"
        }.joined() + "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        let response = try await send(.post, objectURL(key: key, query: "uploadId=\(SigV4Signer.uriEncode(uploadID))"),
                                      headers: [("Content-Length", String(body.count))] + (precondition.header.map { [$0] } ?? []),
                                      payloadHash: SHA256Hex.hex(SHA256Hash.of(body)), body: .bytes(body))
        let text = try await HTTPCalls.text(response)
        if response.status == 412 {
            await abortQuietly(key: key, uploadID: uploadID)
            throw precondition.conflict(key)
        }
        // S3 can answer 200 with an <Error> body.
        guard response.status == 200, !text.contains("<Error>") else {
            throw HTTPCalls.failure("completing the multipart upload of \(key)", response, text)
        }
        return Self.xmlValue("ETag", in: text).map(Self.xmlUnescape)
    }

    /// `AbortMultipartUpload`; a failure is logged (the upload is given up either way, and
    /// ``abortAbandonedUploads(olderThan:keeping:now:)`` or the bucket's lifecycle takes it).
    func abortQuietly(key: String, uploadID: String) async {
        do {
            let response = try await send(.delete, objectURL(key: key, query: "uploadId=\(SigV4Signer.uriEncode(uploadID))"), timeout: .seconds(60))
            _ = try await HTTPCalls.text(response)
            if !(200..<300).contains(response.status), response.status != 404 {
                logger.warning("aborting upload \(uploadID) of \(key): \(response.status)")
            }
        } catch {
            logger.warning("aborting upload \(uploadID) of \(key): \(error)")
        }
    }

    /// Aborts the multipart uploads under this adapter's prefix begun more than `age` ago,
    /// except those `keeping` names (uploads a journal still means to finish), so the bucket
    /// does not keep paying for parts nobody will complete. Returns the aborted upload ids.
    @discardableResult
    public func abortAbandonedUploads(olderThan age: TimeInterval, keeping: Set<String> = [], now: Date = Date()) async throws -> [String] {
        var aborted: [String] = []
        for upload in try await multipartUploads() where !keeping.contains(upload.uploadID) {
            guard let initiated = upload.initiated, now.timeIntervalSince(initiated) >= age else { continue }
            await abortQuietly(key: upload.key, uploadID: upload.uploadID)
            aborted.append(upload.uploadID)
        }
        return aborted
    }

    /// When `record` (an upload of `key` to `target`) has no handle, aborts the uploads of
    /// `key` begun around it (a minute before, for clock skew, to ten after, for the
    /// create's retries) that no record of `database` owns: a run cut between
    /// `CreateMultipartUpload` and recording its answer (``UploadRecord`` durable before the
    /// create, its handle durable after) left one that nothing will complete. None holds a
    /// part: no part goes up before the handle is recorded. A listing that fails is logged
    /// (the sweep by age takes the rest).
    func abortUnrecordedUploads(of record: UploadRecord?, key: String, target: String, database: CourierDatabase) async throws {
        guard let record, record.remoteId == nil, record.kind == .s3, record.target == target else { return }
        let owned = Set(try await database.uploads().compactMap(\.remoteId))
        let begun = record.createdAt
        do {
            for upload in try await multipartUploads() where upload.key == key && !owned.contains(upload.uploadID) {
                guard let initiated = upload.initiated, initiated >= begun.addingTimeInterval(-60), initiated <= begun.addingTimeInterval(600) else { continue }
                logger.notice("aborting upload \(upload.uploadID) of \(key): begun by a run that could not record it")
                await abortQuietly(key: key, uploadID: upload.uploadID)
            }
        } catch {
            logger.warning("could not list the uploads of \(key) a cut-off run may have begun: \(error)")
        }
    }

    /// The multipart uploads under this adapter's prefix, as `(key, uploadID)`.
    public func pendingMultipartUploads() async throws -> [(key: String, uploadID: String)] {
        try await multipartUploads().map { ($0.key, $0.uploadID) }
    }

    /// `ListMultipartUploads` under the prefix, every page.
    private func multipartUploads() async throws -> [(key: String, uploadID: String, initiated: Date?)] {
        var uploads: [(key: String, uploadID: String, initiated: Date?)] = []
        var keyMarker: String?, idMarker: String?
        repeat {
            var query = "prefix=\(SigV4Signer.uriEncode(configuration.prefix))&uploads="
            if let keyMarker { query = "key-marker=\(SigV4Signer.uriEncode(keyMarker))&" + query }
            if let idMarker { query += "&upload-id-marker=\(SigV4Signer.uriEncode(idMarker))" }
            let xml = try await listPage(query: query)
            for block in Self.xmlBlocks("Upload", in: xml) {
                guard let key = Self.xmlValue("Key", in: block).map(Self.xmlUnescape), let id = Self.xmlValue("UploadId", in: block).map(Self.xmlUnescape) else { continue }
                uploads.append((key, id, Self.xmlValue("Initiated", in: block).flatMap(Self.isoDate)))
            }
            let truncated = Self.xmlValue("IsTruncated", in: xml) == "true"
            keyMarker = truncated ? Self.xmlValue("NextKeyMarker", in: xml).map(Self.xmlUnescape) : nil
            idMarker = truncated ? Self.xmlValue("NextUploadIdMarker", in: xml).map(Self.xmlUnescape) : nil
        } while keyMarker != nil
        return uploads
    }

    static func xmlEscape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// S3's `2010-11-10T20:48:33.000Z` (UTC), parsed without ICU (see `SigV4Signer.timestamps`).
    static func isoDate(_ text: String) -> Date? {
        guard text.hasSuffix("Z") else { return nil }
        return DatabaseDate.parse(String(text.dropLast()))
    }
}
