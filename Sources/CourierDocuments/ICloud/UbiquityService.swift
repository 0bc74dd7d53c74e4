import Courier
import Foundation

/// What iCloud Drive gives an app, as narrow as ``ICloudContainer`` needs: the seam
/// between every decision (portable, tested on Linux against a scripted fake) and the
/// few calls only Apple platforms can make (`SystemUbiquityService`, Darwin only:
/// `NSMetadataQuery`, `startDownloadingUbiquitousItem`, `evictUbiquitousItem`,
/// `NSFileCoordinator`).
///
/// An implementation decides nothing: it passes metadata and errors on as they are.
public protocol UbiquityService: AnyObject, Sendable {
    /// The ubiquity container's `Documents` folder.
    var documentsURL: URL { get }
    /// Starts watching the container's items; `update` receives every item the metadata
    /// index knows, each time it changes (`NSMetadataQuery`'s gathering and updates).
    func startMonitoring(_ update: @escaping @Sendable ([UbiquityItem]) -> Void)
    /// Stops watching and releases what ``startMonitoring(_:)`` set up (the query and its
    /// observers). Called when the container goes away.
    func stopMonitoring()
    /// Asks the system to download the item (`startDownloadingUbiquitousItem(at:)`).
    func startDownloading(_ url: URL) throws
    /// Removes the local copy, keeping the item in iCloud (`evictUbiquitousItem(at:)`).
    func evict(_ url: URL) throws
    /// Coordinated access to `url` (`NSFileCoordinator`): calls `accessor` with the URL to
    /// use, on a thread of the implementation's (never a Swift concurrency thread: the
    /// accessor may block), and holds the access until `accessor` returns. Returns once it
    /// has; throws the coordination's own error, if any.
    func coordinate(_ url: URL, writing: Bool, accessor: @escaping @Sendable (URL) -> Void) async throws
}

/// One item as the metadata index describes it. Advisory: open/read is the truth.
public struct UbiquityItem: Sendable, Equatable {
    /// The item's path as the index reports it (it may spell `/private/var` for `/var`).
    public var path: String
    /// `NSMetadataUbiquitousItemDownloadingStatusKey`, when reported.
    public var downloadingStatus: UbiquityDownloadingStatus?
    /// `NSMetadataUbiquitousItemPercentDownloadedKey` (0…100), when reported.
    public var percentDownloaded: Double?
    /// `NSMetadataUbiquitousItemIsDownloadingKey`, when reported.
    public var isDownloading: Bool?
    /// `NSMetadataUbiquitousItemDownloadingErrorKey`, when reported.
    public var downloadingError: UbiquityError?

    /// Makes an item.
    public init(path: String, downloadingStatus: UbiquityDownloadingStatus? = nil, percentDownloaded: Double? = nil,
                isDownloading: Bool? = nil, downloadingError: UbiquityError? = nil) {
        self.path = path
        self.downloadingStatus = downloadingStatus
        self.percentDownloaded = percentDownloaded
        self.isDownloading = isDownloading
        self.downloadingError = downloadingError
    }
}

/// The three values of `NSMetadataUbiquitousItemDownloadingStatusKey`.
public enum UbiquityDownloadingStatus: Sendable, Equatable {
    /// `…StatusNotDownloaded`: only a placeholder is local.
    case notDownloaded
    /// `…StatusDownloaded`: a local copy exists, but a newer version is in iCloud.
    case downloaded
    /// `…StatusCurrent`: the local copy is the newest.
    case current
}

/// An `NSError` as plain values (Sendable, and the same on every platform).
public struct UbiquityError: Sendable, Equatable {
    /// The error's domain (`NSCocoaErrorDomain`, …).
    public var domain: String
    /// The error's code.
    public var code: Int
    /// Its localized description.
    public var message: String
    /// The underlying error's domain and code (`NSUnderlyingErrorKey`), when there is one.
    public var underlying: (domain: String, code: Int)?

    /// Makes an error value.
    public init(domain: String, code: Int, message: String, underlying: (domain: String, code: Int)? = nil) {
        self.domain = domain
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The domain and codes, as Courier reports the system's own error (`CourierError.system`).
    public var system: SystemError {
        SystemError(domain: domain, code: code, underlyingDomain: underlying?.domain, underlyingCode: underlying?.code)
    }

    /// The values of any error, through `NSError` bridging.
    public init(_ error: any Error) {
        let ns = error as NSError
        let inner = ns.userInfo[NSUnderlyingErrorKey] as? NSError
        self.init(domain: ns.domain, code: ns.code, message: ns.localizedDescription, underlying: inner.map { ($0.domain, $0.code) })
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.domain == b.domain && a.code == b.code && a.message == b.message && a.underlying?.domain == b.underlying?.domain && a.underlying?.code == b.underlying?.code
    }
}
