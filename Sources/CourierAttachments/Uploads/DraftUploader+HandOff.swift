import Courier
import Foundation

extension DraftRemoteStorage: UploadHandingOff {
    /// The rest of the attachment's upload, as one append for an upload task.
    public func handOffRemainder(of file: URL, attachment: Attachment, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        try await uploader(for: attachment).handOffRemainder(of: file, journal: journal, folder: folder)
    }
}

extension DraftUploader {
    /// The rest of the upload from the server's offset, as one append marked complete whose
    /// body is the source file itself when nothing was sent yet, else a copy of the rest. An
    /// upload that has not begun is created here. Its reply is judged by
    /// `UploadPieceReply` (a 2xx: every byte arrived).
    public func handOffRemainder(of file: URL, journal: UploadJournal, folder: URL) async throws -> [UploadTaskRequest] {
        let db = journal.database
        let source = try UploadSource(url: file)
        guard source.size > 0, try await db.uploadHandOffPieces(uploadId: journal.id).isEmpty else { return [] }
        var existing = try await db.upload(id: journal.id)
        // An upload the system began whose URL Courier cannot speak to: the system goes on with it.
        if existing?.record.remoteId == nil, existing?.record.systemResumeData != nil { return [] }
        if existing?.record.remoteId == nil {
            try await beginRecord(of: source, journal)
            do {
                try await db.noteUploadHandle(id: journal.id, remoteId: try await create().absoluteString)
            } catch let notSpoken as NotSpoken {
                try await db.deleteUpload(id: journal.id)   // the record of an upload that never existed
                throw notSpoken.error
            }
            existing = try await db.upload(id: journal.id)
        }
        guard let existing, existing.record.kind == .ietf, let remote = existing.record.remoteId, let url = URL(string: remote),
              case .resume = UploadResume.decide(record: existing.record, source: source, kind: .ietf, target: target.absoluteString, partSize: chunkSize),
              try TusUploader.changedChunk(existing.parts, source) == nil,
              let held = try await serverOffset(url, size: source.size), held.offset < source.size, !held.complete else { return [] }
        let offset = held.offset
        // The hand-off sends the rest: the system's blob (an upload from before) is stale.
        if existing.record.systemResumeData != nil { try await db.noteUploadResumeData(id: journal.id, nil) }
        let piece = try UploadPieceFile.rest(of: source, from: offset, number: (existing.parts.map(\.number).max() ?? 0) + 1, journal: journal, folder: folder)
        let credentials = url.origin == target.origin ? headers : []
        return try await UploadPieceFile.record([UploadTaskRequest(piece: piece, kind: .ietf, method: "PATCH", url: url.absoluteString,
                                                                   headers: credentials + Draft.appendHeaders(version, offset: offset, complete: true),
                                                                   carriesCredentials: !credentials.isEmpty)], folder: folder, db)
    }
}
