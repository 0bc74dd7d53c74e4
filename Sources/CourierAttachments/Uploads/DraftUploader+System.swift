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
        try await beginRecord(of: source, journal)
        return try await go(source, through: system, journal: journal, location: nil, resumeData: nil)
    }

    private func go(_ source: UploadSource, through system: any SystemResumableUploading, journal: UploadJournal,
                    location known: URL?, resumeData blob: Data?) async throws -> URL? {
        let db = journal.database
        // `location`: an upload Courier's own requests can go on with (recorded); `named`: any
        // the server named (a version Courier does not speak goes on only through the system).
        var location = known, named = known, resumeData = blob
        var failures = 0
        var best: Int64 = 0   // net progress: past the most the server ever held
        var mostSent: Int64 = 0   // or, where Courier cannot ask, past the most the system ever said it sent
        while true {
            // A blob is good for one try: forgotten before it is used, kept again if the
            // system gives a new one.
            if resumeData != nil { try await db.noteUploadResumeData(id: journal.id, nil) }
            let (outcome, said, sent) = try await attempt(source, system, journal: journal, resumeData: resumeData)
            if let said { named = said.url; location = said.ours ? said.url : location }
            switch outcome {
            case .finished(let status) where (200..<300).contains(status):
                // Also a server without the draft: it took the file as a plain upload.
                try source.checkUnchanged()
                try await db.deleteUpload(id: journal.id)
                return named ?? target
            case .finished(let status) where [404, 410].contains(status) && resumeData != nil:
                throw UploadRestart.gone   // the server no longer has the upload: started again, once
            case .finished(let status) where [401, 403, 409].contains(status) && resumeData != nil:
                // The blob refused (it may carry headers since renewed): Courier's own requests
                // go on with the upload, or the system starts a new one.
                logger.info("\(source.url.lastPathComponent): HTTP \(status) to the system's resume data; dropping it")
                if location != nil { return nil }
                resumeData = nil
            case .finished(let status) where ![408, 423, 429].contains(status) && status < 500:
                throw CourierError(status == 401 || status == 403 ? .accessDenied : .remoteStorage,
                                   "the server refused the upload of \(source.url.lastPathComponent): HTTP \(status)", httpStatus: status)
            case .finished(let status):
                logger.info("\(source.url.lastPathComponent): HTTP \(status) from the server")
                resumeData = nil
            case let .interrupted(error, blob):
                if let blob { try await db.noteUploadResumeData(id: journal.id, blob) }
                resumeData = blob
                if !Task.isCancelled, !error.isPassing, error.code != .cancelled { throw error }   // TLS, App Transport Security: no retry mends it
                logger.info("\(source.url.lastPathComponent): \(error)")
            }
            if Task.isCancelled { throw CancellationError() }   // stopped: the record and the blob stay
            // Net progress, by the server's own account when Courier can ask it; else by the most
            // the system said it sent (a cut at the same place forever never passes it).
            if let location {
                if let held = try? await serverOffset(location, size: source.size), held.offset > best {   // unanswered: no progress seen
                    best = held.offset
                    failures = 0
                }
            } else if sent > mostSent {
                mostSent = sent
                failures = 0
            }
            failures += 1
            if failures >= maxAttempts {
                throw CourierError(.network, "the upload of \(source.url.lastPathComponent) failed \(failures) times in a row at byte \(best)")
            }
            // No blob to go on from: Courier's own offset request and appends go on with an
            // upload they can speak to; any other is sent again.
            if resumeData == nil, location != nil { return nil }
            try await Task.sleep(for: .milliseconds(100 << min(failures, 6)))
        }
    }

    /// One system upload: its outcome, the URL the server named meanwhile with whether
    /// Courier's own requests speak its version (then recorded at once, so a kill from then
    /// on goes on with an offset request), and the most it said it sent (the progress shown).
    /// The journal's rate limit does not reach the system's task.
    private func attempt(_ source: UploadSource, _ system: any SystemResumableUploading, journal: UploadJournal,
                         resumeData: Data?) async throws -> (SystemUploadOutcome, (url: URL, ours: Bool)?, sent: Int64) {
        let (events, sink) = AsyncStream<SystemUploadEvent>.makeStream()
        let counter = UploadCounter(journal: journal, total: source.size, held: 0)
        let target = target, headers = headers, file = source.url
        let upload = Task {
            let outcome = await system.upload(file, to: target, headers: headers, resumeData: resumeData) { sink.yield($0) }
            sink.finish()
            return outcome
        }
        var said: (url: URL, ours: Bool)?, reported: Int64 = 0
        await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case let .location(url, spoken):
                    guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else { continue }
                    let ours = (spoken ?? system.interopVersion) == version.rawValue
                    said = (url, ours)
                    guard ours else { continue }
                    do { try await journal.database.noteUploadHandle(id: journal.id, remoteId: url.absoluteString) } catch {
                        logger.warning("recording the upload's URL: \(error)")   // a kill now starts it again
                    }
                case .sent(let bytes):
                    if bytes > reported { counter.sent(min(bytes, source.size) - reported); reported = min(bytes, source.size) }
                }
            }
        } onCancel: { upload.cancel() }
        return (await upload.value, said, reported)   // the events ended with it
    }
}
