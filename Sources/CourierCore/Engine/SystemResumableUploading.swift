import Foundation

/// An upload whose protocol the system speaks itself: URLSession on Apple platforms since
/// iOS 17 and macOS 14 sends a file as a resumable upload of the IETF draft "Resumable
/// Uploads for HTTP" (with the interop version of the OS it runs on) when the server speaks
/// it, resumes short interruptions by itself, and hands back an opaque blob to go on from
/// after a longer one (`URLSessionResumableUploads` in CourierURLSession).
///
/// Courier keeps its own record on top (`DraftUploader` in CourierAttachments): the
/// upload's URL as soon as the server names it, and the blob after each interruption. So
/// a relaunch goes on from the blob, and a kill that left none goes on with an offset
/// request of Courier's own and sends only the rest.
public protocol SystemResumableUploading: Sendable {
    /// The draft's interop version the system is expected to speak (3 on iOS 17, 5 on 18.0,
    /// 6 on 18.1; later systems speak later ones): what Courier's own requests say. The `104`
    /// names the version the system actually spoke (``SystemUploadEvent/location(_:interopVersion:)``);
    /// an upload whose version Courier's requests do not say goes on only through the system.
    var interopVersion: Int { get }

    /// Sends all of `file` to `url` (`POST`, with `headers`) as a resumable upload, or goes on
    /// from `resumeData`, and returns once the upload ended. A server that does not speak the
    /// draft gets the file as a plain upload. Cancelling the calling task
    /// stops it and returns ``SystemUploadOutcome/interrupted(_:resumeData:)`` with the
    /// blob to go on from, when the system gives one.
    /// - Parameters:
    ///   - file: the file sent (it must not change until the upload ends).
    ///   - url: the creation URL.
    ///   - headers: sent with the creation (auth); never persisted.
    ///   - resumeData: a blob an earlier interruption gave; used once.
    ///   - events: what the system reports as the upload goes.
    func upload(_ file: URL, to url: URL, headers: [(name: String, value: String)], resumeData: Data?,
                events: @escaping @Sendable (SystemUploadEvent) -> Void) async -> SystemUploadOutcome
}

/// What the system reports while it uploads.
public enum SystemUploadEvent: Sendable, Equatable {
    /// The server named the upload's URL (its `104 Upload Resumption Supported` reply's
    /// `Location`) and the draft's interop version it speaks on it
    /// (`Upload-Draft-Interop-Version`, when the reply says one): from now on the upload can
    /// be resumed with an offset request of that version.
    case location(URL, interopVersion: Int?)
    /// Bytes of the file sent so far (not yet confirmed by the server).
    case sent(Int64)
}

/// How a system upload ended.
public enum SystemUploadOutcome: Sendable {
    /// The server answered the upload with this final status (a `2xx`: it holds the whole file).
    case finished(status: Int)
    /// The upload stopped before the server's final reply (a lost connection, a stop of
    /// the caller's task), with the blob to go on from when the system gave one.
    case interrupted(CourierError, resumeData: Data?)
}
