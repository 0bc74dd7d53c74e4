#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
import CourierURLSession
#endif
import Foundation

// Darwin-only: the background session itself. Declarations checked against
// developer.apple.com (URLSessionConfiguration: `class func background(withIdentifier
// identifier: String) -> URLSessionConfiguration`, iOS 8 / macOS 10.10;
// `var isDiscretionary: Bool { get set }`, iOS 7 / macOS 10.10), and type-checked on Linux
// by scripts/darwin-typecheck.
extension BackgroundTransfers {
    /// A background session's configuration: its tasks go on in a system process while
    /// the app is suspended or not running, and the system relaunches the app for their
    /// events (`sessionSendsLaunchEvents` is true by default). Give the same identifier
    /// at every launch.
    public static func backgroundConfiguration(identifier: String, policies: URLSessionTransport.Policies = .init()) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
        configuration.isDiscretionary = false   // the user is waiting for these files
        configuration.allowsCellularAccess = policies.allowsCellularAccess
        policies.applyPlatformPolicies(to: configuration)
        return configuration
    }

    /// The resume data a failed or cancelled download task left in its error
    /// (`NSURLSessionDownloadTaskResumeData`: `let NSURLSessionDownloadTaskResumeData: String`,
    /// iOS 7 / macOS 10.9), if any.
    static func resumeData(in error: any Error) -> Data? {
        (error as NSError).userInfo[NSURLSessionDownloadTaskResumeData] as? Data
    }
}
#endif
