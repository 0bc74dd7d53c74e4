import Foundation

/// The operating system's own error behind a ``CourierError``: an `NSError`'s domain and
/// code (and its underlying error's, when it had one), so an app can branch on what the
/// system said, not on text. Kept as plain values: the same on every platform, Sendable,
/// and stored with the error.
///
/// ```swift
/// if let system = error.system, system.domain == NSCocoaErrorDomain, system.code == NSUbiquitousFileUbiquityServerNotAvailable { … }
/// ```
public struct SystemError: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The error's domain (`NSCocoaErrorDomain`, `NSPOSIXErrorDomain`, …).
    public var domain: String
    /// The error's code in its domain.
    public var code: Int
    /// The underlying error's domain (`NSUnderlyingErrorKey`), when there is one.
    public var underlyingDomain: String?
    /// The underlying error's code, when there is one.
    public var underlyingCode: Int?

    /// Makes one from its values.
    public init(domain: String, code: Int, underlyingDomain: String? = nil, underlyingCode: Int? = nil) {
        self.domain = domain
        self.code = code
        self.underlyingDomain = underlyingDomain
        self.underlyingCode = underlyingCode
    }

    /// The values of any error, through `NSError` bridging.
    public init(_ error: any Error) {
        let ns = error as NSError
        let inner = ns.userInfo[NSUnderlyingErrorKey] as? NSError
        self.init(domain: ns.domain, code: ns.code, underlyingDomain: inner?.domain, underlyingCode: inner?.code)
    }

    /// An `NSError` of the same domain and code (with the underlying one), to compare or
    /// pass on as the system's own. It carries no message: ``CourierError/message`` has it.
    public var nsError: NSError {
        var info: [String: Any] = [:]
        if let underlyingDomain, let underlyingCode { info[NSUnderlyingErrorKey] = NSError(domain: underlyingDomain, code: underlyingCode) }
        return NSError(domain: domain, code: code, userInfo: info)
    }

    /// `domain code` (and the underlying error's).
    public var description: String {
        guard let underlyingDomain, let underlyingCode else { return "\(domain) \(code)" }
        return "\(domain) \(code) (underlying \(underlyingDomain) \(underlyingCode))"
    }
}
