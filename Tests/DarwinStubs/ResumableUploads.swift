// DarwinStubs: URLSession's resumable uploads (iOS 17, macOS 14), as Apple's documentation
// declares them (page named beside each). Newer than the package's floor, so in a file of
// their own (scripts/darwin-typecheck checks the floor in DarwinStubs.swift only): every use
// must sit behind `@available(iOS 17.0, macOS 14.0, *)`. Nothing here ever runs.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *)
extension URLSession {
    /// https://developer.apple.com/documentation/foundation/urlsession/uploadtask(withresumedata:)
    /// (`func uploadTask(withResumeData resumeData: Data) -> URLSessionUploadTask`)
    public func uploadTask(withResumeData resumeData: Data) -> URLSessionUploadTask { fatalError("stub") }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *)
extension URLSessionUploadTask {
    /// https://developer.apple.com/documentation/foundation/urlsessionuploadtask/cancel(byproducingresumedata:)
    /// (`func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void)`)
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) { fatalError("stub") }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, visionOS 1.0, watchOS 10.0, *)
extension URLError {
    /// https://developer.apple.com/documentation/foundation/urlerror/uploadtaskresumedata (`var uploadTaskResumeData: Data? { get }`)
    public var uploadTaskResumeData: Data? { fatalError("stub") }
}
