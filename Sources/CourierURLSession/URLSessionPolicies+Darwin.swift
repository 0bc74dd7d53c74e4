#if canImport(Darwin) || COURIER_DARWIN_TYPECHECK
#if COURIER_DARWIN_TYPECHECK
import DarwinStubs
import CourierURLSession
#endif
import Foundation

// Darwin-only: the network policies only Apple's URLSession has. Declarations checked
// against developer.apple.com (URLSessionConfiguration: waitsForConnectivity, iOS 11;
// allowsExpensiveNetworkAccess and allowsConstrainedNetworkAccess, iOS 13; all
// `var …: Bool { get set }`), and type-checked on Linux by scripts/darwin-typecheck.
extension URLSessionTransport.Policies {
    /// Sets the policies FoundationNetworking lacks on a session configuration.
    func applyPlatformPolicies(to configuration: URLSessionConfiguration) {
        configuration.waitsForConnectivity = waitsForConnectivity
        configuration.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        configuration.allowsConstrainedNetworkAccess = allowsConstrainedNetworkAccess
    }
}
#endif
