import Courier
import Foundation

/// An upload the system carries (URLSession on Apple platforms since iOS 17: the draft with
/// the interop version of the OS), with Courier's record on top: the upload's URL as soon as
/// the server names it, the system's blob after each interruption, the server's offset
/// (asked by Courier) as the measure of net progress. A relaunch goes on from the blob; a
/// kill that left none goes on with Courier's own offset request and appends (`run`).
extension DraftUploader {
    /// Uploads `source` through `system`; `nil` when the upload is to go on over Courier's
    /// own requests (the server named the upload, and no blob is left to go on from).
    func upload(_ source: UploadSource, through system: any SystemResumableUploading, journal: UploadJournal) async throws -> URL? {
        let db = journal.database
        let existing = try await db.upload(id: journal.id)?.record
        if let existing, existing.kind == .ietf, existing.target == target.absoluteString,
           existing.sourceSize == source.size, existing.sourceModified == source.modified {
            let location = existing.remoteId.flatMap(URL.init(string:))
            if let blob = existing.systemResumeData {
                return try await go(source, through: system, journal: journal, location: location, resumeData: blob)
            }
            if location != nil { return nil }   // named, and no blob: Courier's offset request goes on
        } else if let abandoned = existing?.remoteId.flatMap(URL.init(string:)) {
            await cancel(abandoned)   // another file, or another target: the old upload is dropped
        }
        try await db.beginUpload(UploadRecord(id: journal.id, sourcePath: source.url.path, sourceSize: source.size,
                                              sourceModified: source.modified, kind: .ietf, target: target.absoluteString, partSize: chunkSize))
        return try await go(source, through: system, journal: journal, location: nil, resumeData: nil)
    }

    private func go(_ source: UploadSource, through system: any SystemResumableUploading, journal: UploadJournal,
                    location known: URL?, resumeData blob: Data?) async throws -> URL? {
        let db = journal.database
        var location = known, resumeData = blob
        var failures = 0
        var best: Int64 = 0   // net progress: past the most the server ever held
        while true {
            // A blob is good for one try: forgotten before it is used, kept again if the
            // system gives a new one.
            if resumeData != nil { try await db.noteUploadResumeData(id: journal.id, nil) }
            let (outcome, named) = try await attempt(source, system, journal: journal, resumeData: resumeData)
            location = named ?? location
            switch outcome {
            case .finished(let status) where (200..<300).contains(status):
                try source.checkUnchanged()
                try await db.deleteUpload(id: journal.id)
                return location ?? target
            case .finished(let status) where [404, 410].contains(status) && resumeData != nil:
                throw UploadRestart.gone   // the server no longer has the upload: started again, once
            case .finished(let status) where ![408, 423, 429].contains(status) && status < 500:
                throw CourierError(status == 401 || status == 403 ? .accessDenied : .remoteStorage,
                                   "the server refused the upload of \(source.url.lastPathComponent): HTTP \(status)", httpStatus: status)
            case .finished(let status):
                logger.info("\(source.url.lastPathComponent): HTTP \(status) from the server")
                resumeData = nil
            case let .interrupted(error, blob):
                if let blob { try await db.noteUploadResumeData(id: journal.id, blob) }
                if Task.isCancelled { throw CancellationError() }   // stopped: the record and the blob stay
                logger.info("\(source.url.lastPathComponent): \(error)")
                resumeData = blob
            }
            // Net progress, by the server's own account when it named the upload.
            if let location, let held = try? await serverOffset(location, size: source.size), held.offset > best {   // unanswered: no progress seen
                best = held.offset
                failures = 0
            }
            failures += 1
            if failures >= maxAttempts {
                throw CourierError(.network, "the upload of \(source.url.lastPathComponent) failed \(failures) times in a row at byte \(best)")
            }
            // No blob to go on from: Courier's own offset request and appends go on with an
            // upload the server named; one it never named is sent again.
            if resumeData == nil, location != nil { return nil }
            try await Task.sleep(for: .milliseconds(100 << min(failures, 6)))
        }
    }

    /// One system upload: its outcome and the URL the server named meanwhile (recorded at
    /// once, so a kill from then on goes on with an offset request). Progress is what the
    /// system says it sent.
    private func attempt(_ source: UploadSource, _ system: any SystemResumableUploading, journal: UploadJournal,
                         resumeData: Data?) async throws -> (SystemUploadOutcome, URL?) {
        let (events, sink) = AsyncStream<SystemUploadEvent>.makeStream()
        let counter = UploadCounter(journal: journal, total: source.size, held: 0)
        let target = target, headers = headers, file = source.url
        let upload = Task {
            let outcome = await system.upload(file, to: target, headers: headers, resumeData: resumeData) { sink.yield($0) }
            sink.finish()
            return outcome
        }
        var named: URL?, reported: Int64 = 0
        await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case .location(let url):
                    named = url
                    do { try await journal.database.noteUploadHandle(id: journal.id, remoteId: url.absoluteString) } catch {
                        logger.warning("recording the upload's URL: \(error)")   // a kill now starts it again
                    }
                case .sent(let bytes):
                    if bytes > reported { counter.sent(min(bytes, source.size) - reported); reported = min(bytes, source.size) }
                }
            }
        } onCancel: { upload.cancel() }
        return (await upload.value, named)   // the events ended with it
    }
}
