import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
@_spi(Darwin) import CourierURLSession
#endif

// URLSession's own resumable uploads. Portable but for three calls that only Apple's
// URLSession has (iOS 17 / macOS 14), each behind `#if` and checked against
// developer.apple.com: `func uploadTask(withResumeData resumeData: Data) -> URLSessionUploadTask`
// (URLSession); `func cancel(byProducingResumeData completionHandler: @escaping @Sendable
// (Data?) -> Void)` (URLSessionUploadTask: nil when the server does not speak the draft);
// `var uploadTaskResumeData: Data? { get }` (URLError). `optional func urlSession(_ session:
// URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse)`
// (URLSessionTaskDelegate, iOS 17) is a plain method here: FoundationNetworking never calls it.
// Type-checked with them by scripts/darwin-typecheck; run on Linux without them.

/// URLSession's own resumable upload (iOS 17, macOS 14 and later): the system speaks the
/// IETF draft with the interop version of the OS, resumes short interruptions itself, and
/// gives a blob to go on from after a longer one or a stop. `DraftUploader` uses it by
/// default there and keeps Courier's record on top. Over FoundationNetworking (Linux) it is
/// a plain upload with no blob.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *)
public final class URLSessionResumableUploads: SystemResumableUploading, Sendable {
    private let router = Router()
    private let session: URLSession

    /// A client over a session of its own, made from `configuration` (not a background one).
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// 3 on iOS 17, 5 on 18.0, 6 from 18.1 (the draft's versions as Apple shipped them).
    public var interopVersion: Int {
        if #available(iOS 18.1, macOS 15.1, tvOS 18.1, visionOS 2.1, watchOS 11.1, *) { return 6 }
        if #available(iOS 18.0, macOS 15.0, tvOS 18.0, visionOS 2.0, watchOS 11.0, *) { return 5 }
        return 3
    }

    /// Sends `file` in one upload task (or goes on from `resumeData` with
    /// `uploadTask(withResumeData:)`); a stop of the calling task cancels it producing a blob.
    public func upload(_ file: URL, to url: URL, headers: [(name: String, value: String)], resumeData: Data?,
                       events: @escaping @Sendable (SystemUploadEvent) -> Void) async -> SystemUploadOutcome {
        let task: URLSessionUploadTask
        if let resumeData {
            #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
            task = session.uploadTask(withResumeData: resumeData)
            // Declared non-optional, documented as "nil if the resumeData is invalid": no callback would ever come for it.
            if unsafeBitCast(task, to: URLSessionUploadTask?.self) == nil { return .interrupted(CourierError(.network, "the system refused the resume data"), resumeData: nil) }
            #else
            _ = resumeData
            return .interrupted(CourierError(.network, "this URLSession has no resumable uploads"), resumeData: nil)
            #endif
        } else {
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            task = session.uploadTask(with: request, fromFile: file)
        }
        let id = task.taskIdentifier, ends = router.ends
        ends.prepare(id)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                ends.begin(id, events: events, continuation)
                task.resume()
            }
        } onCancel: {
            ends.stopping(id)
            #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
            task.cancel(byProducingResumeData: { ends.paused(id, $0) })
            #else
            task.cancel()
            ends.paused(id, nil)
            #endif
        }
    }

    /// The session's delegate: forwards each task's callbacks to ``SystemUploadEnds``.
    private final class Router: NSObject, URLSessionTaskDelegate, Sendable {
        let ends = SystemUploadEnds()

        func urlSession(_ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse) {
            guard response.statusCode == 104, let location = response.value(forHTTPHeaderField: "Location"),
                  let url = URL(string: location, relativeTo: task.originalRequest?.url)?.absoluteURL else { return }
            let version = response.value(forHTTPHeaderField: "Upload-Draft-Interop-Version").flatMap { Int($0) }
            ends.say(task.taskIdentifier, .location(url, interopVersion: version))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                        totalBytesExpectedToSend: Int64) {
            ends.say(task.taskIdentifier, .sent(totalBytesSent))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            #if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
            let blob = (error as? URLError)?.uploadTaskResumeData
            #else
            let blob: Data? = nil
            #endif
            ends.ended(task.taskIdentifier, error: error, status: (task.response as? HTTPURLResponse)?.statusCode, resumeData: blob,
                       url: task.originalRequest?.url?.absoluteString ?? "the server")
        }
    }
}
