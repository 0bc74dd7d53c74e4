import Courier
import Foundation
import Logging

/// The restart rule the resumable uploaders (tus, the IETF draft) share: an upload the server
/// lost, or a file that changed while it went up, starts again from a new upload, once; the
/// second time is `E_REMOTE_NOT_FOUND` or `E_SOURCE_CHANGED`.
enum UploadRestart: Error {
    /// The server no longer has the upload (404, 410, or closed short of the file).
    case gone

    /// Runs `run` on the file as it is now, again once after either cause; `cancel` tells
    /// the server a changed file's old upload may go, and `server` names it in the error.
    static func atMostOnce(_ file: URL, journal: UploadJournal, server: String, logger: Logger, cancel: (URL) async -> Void,
                           run: (UploadSource) async throws -> URL) async throws -> URL {
        try await journal.checkNotHandedOff()
        var attempt = 0
        while true {
            attempt += 1
            let source = try UploadSource(url: file)
            do {
                return try await run(source)
            } catch UploadRestart.gone {
                try await journal.database.deleteUpload(id: journal.id)
                guard attempt == 1 else { throw CourierError(.remoteNotFound, "\(server) lost the upload of \(file.lastPathComponent) twice") }
                logger.notice("\(file.lastPathComponent): the server no longer has the upload; starting again")
            } catch let changed as UploadSource.Changed {
                if let remote = try await journal.database.upload(id: journal.id)?.record.remoteId, let url = URL(string: remote) { await cancel(url) }
                try await journal.database.deleteUpload(id: journal.id)
                guard attempt == 1 else { throw changed.error }
                logger.notice("\(changed.error.message); starting again")
            }
        }
    }
}
