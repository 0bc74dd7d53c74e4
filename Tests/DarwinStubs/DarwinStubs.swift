// DarwinStubs: test-only. The Apple-only API that Courier's Darwin code calls, declared as
// Apple's documentation shows it (page named beside each), so scripts/darwin-typecheck can
// type-check that code on Linux, where Foundation lacks these. Nothing here ever runs.
//
// Only what Foundation on Linux lacks is declared: URLSessionConfiguration's network
// policies, URLResourceValues.isExcludedFromBackup,
// URL.setResourceValues, FileAttributeKey.protectionKey, FileProtectionType,
// FileManager.setAttributes, NotificationCenter and OperationQueue come from
// swift-corelibs-foundation with Apple's signatures.
//
// Availability: each `@available` line copies the documentation's. scripts/darwin-typecheck
// fails when a declaration here is newer than Package.swift's floor (iOS 16, macOS 13,
// tvOS 16, visionOS 1): code that calls it would not build for the apps Courier supports.
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

// MARK: - URLSessionConfiguration (network policies FoundationNetworking lacks)
extension URLSessionConfiguration {
    /// https://developer.apple.com/documentation/foundation/urlsessionconfiguration/waitsforconnectivity
    /// (`var waitsForConnectivity: Bool { get set }`; FoundationNetworking has a get-only one)
    @available(iOS 11.0, macOS 10.13, tvOS 11.0, visionOS 1.0, watchOS 4.0, *)
    @_disfavoredOverload
    public var waitsForConnectivity: Bool { get { fatalError("stub") } set { fatalError("stub") } }
    /// https://developer.apple.com/documentation/foundation/urlsessionconfiguration/allowsexpensivenetworkaccess
    @available(iOS 13.0, macOS 10.15, tvOS 13.0, visionOS 1.0, watchOS 6.0, *)
    public var allowsExpensiveNetworkAccess: Bool { get { fatalError("stub") } set { fatalError("stub") } }
    /// https://developer.apple.com/documentation/foundation/urlsessionconfiguration/allowsconstrainednetworkaccess
    @available(iOS 13.0, macOS 10.15, tvOS 13.0, visionOS 1.0, watchOS 6.0, *)
    public var allowsConstrainedNetworkAccess: Bool { get { fatalError("stub") } set { fatalError("stub") } }
    /// https://developer.apple.com/documentation/foundation/urlsessionconfiguration/background(withidentifier:)
    /// (`class func background(withIdentifier identifier: String) -> URLSessionConfiguration`;
    /// FoundationNetworking declares it unavailable, so this one is picked)
    @available(iOS 8.0, macOS 10.10, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public class func background(withIdentifier identifier: String) -> URLSessionConfiguration { fatalError("stub") }
}

// MARK: - Resume data
/// https://developer.apple.com/documentation/foundation/nsurlsessiondownloadtaskresumedata
/// (`let NSURLSessionDownloadTaskResumeData: String`; FoundationNetworking lacks it)
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSURLSessionDownloadTaskResumeData: String = "NSURLSessionDownloadTaskResumeData"

// MARK: - NSMetadataQuery
// https://developer.apple.com/documentation/foundation/nsmetadataquery
@available(iOS 5.0, macOS 10.4, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
open class NSMetadataQuery: NSObject {
    /// `init()`: NSObject's (the class page lists it; no page of its own).
    public override init() { super.init() }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/searchscopes
    open var searchScopes: [Any] = []
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/predicate (`@NSCopying var predicate: NSPredicate?`)
    open var predicate: NSPredicate?
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/start()
    open func start() -> Bool { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/stop()
    open func stop() { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/disableupdates()
    open func disableUpdates() { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/enableupdates()
    open func enableUpdates() { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/results
    open var results: [Any] { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/resultcount
    open var resultCount: Int { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/result(at:)
    open func result(at idx: Int) -> Any { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsmetadataquery/operationqueue
    @available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    open var operationQueue: OperationQueue?
}

// https://developer.apple.com/documentation/foundation/nsmetadataitem
@available(iOS 5.0, macOS 10.4, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
open class NSMetadataItem: NSObject {
    /// https://developer.apple.com/documentation/foundation/nsmetadataitem/value(forattribute:)
    open func value(forAttribute key: String) -> Any? { fatalError("stub") }
}

// https://developer.apple.com/documentation/foundation/metadata-query-search-scopes
// (all scope constants are `let …: String`, e.g. nsmetadataqueryubiquitousdatascope)
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataQueryUbiquitousDocumentsScope: String = "NSMetadataQueryUbiquitousDocumentsScope"

// https://developer.apple.com/documentation/foundation/nsmetadataitemurlkey
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataItemURLKey: String = "kMDItemURL"
// https://developer.apple.com/documentation/foundation/nsmetadataitemfsnamekey
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataItemFSNameKey: String = "kMDItemFSName"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemdownloadingstatuskey
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemDownloadingStatusKey: String = "NSMetadataUbiquitousItemDownloadingStatusKey"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemdownloadingstatuscurrent
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemDownloadingStatusCurrent: String = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemdownloadingstatusdownloaded
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemDownloadingStatusDownloaded: String = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemdownloadingstatusnotdownloaded
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemDownloadingStatusNotDownloaded: String = "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitempercentdownloadedkey (NSNumber, 0…100)
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemPercentDownloadedKey: String = "NSMetadataUbiquitousItemPercentDownloadedKey"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemisdownloadingkey (NSNumber, Bool)
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemIsDownloadingKey: String = "NSMetadataUbiquitousItemIsDownloadingKey"
// https://developer.apple.com/documentation/foundation/nsmetadataubiquitousitemdownloadingerrorkey (NSError)
@available(iOS 7.0, macOS 10.9, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public let NSMetadataUbiquitousItemDownloadingErrorKey: String = "NSMetadataUbiquitousItemDownloadingErrorKey"

extension NSNotification.Name {
    /// https://developer.apple.com/documentation/foundation/nsnotification/name-swift.struct/nsmetadataquerydidupdate
    @available(iOS 5.0, macOS 10.4, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public static let NSMetadataQueryDidUpdate = NSNotification.Name("NSMetadataQueryDidUpdateNotification")
    /// …/name-swift.struct/nsmetadataquerydidfinishgathering (linked from NSMetadataQuery's
    /// pages; declared like its sibling nsmetadataquerygatheringprogress)
    @available(iOS 5.0, macOS 10.4, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public static let NSMetadataQueryDidFinishGathering = NSNotification.Name("NSMetadataQueryDidFinishGatheringNotification")
}

// MARK: - FileManager and iCloud
extension FileManager {
    /// https://developer.apple.com/documentation/foundation/filemanager/startdownloadingubiquitousitem(at:)
    @available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public func startDownloadingUbiquitousItem(at url: URL) throws { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/filemanager/evictubiquitousitem(at:)
    @available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public func evictUbiquitousItem(at url: URL) throws { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/filemanager/url(forubiquitycontaineridentifier:)
    @available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public func url(forUbiquityContainerIdentifier containerIdentifier: String?) -> URL? { fatalError("stub") }
}

// MARK: - File coordination
// https://developer.apple.com/documentation/foundation/nsfilepresenter
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
public protocol NSFilePresenter: NSObjectProtocol {}

// https://developer.apple.com/documentation/foundation/nsfilecoordinator
@available(iOS 5.0, macOS 10.7, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
open class NSFileCoordinator: NSObject {
    /// https://developer.apple.com/documentation/foundation/nsfilecoordinator/init(filepresenter:)
    public init(filePresenter filePresenterOrNil: (any NSFilePresenter)?) { super.init() }
    /// https://developer.apple.com/documentation/foundation/nsfilecoordinator/cancel()
    open func cancel() { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsfilecoordinator/coordinate(with:queue:byaccessor:) (iOS 8, macOS 10.10)
    @available(iOS 8.0, macOS 10.10, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    open func coordinate(with intents: [NSFileAccessIntent], queue: OperationQueue, byAccessor accessor: @escaping @Sendable ((any Error)?) -> Void) {
        fatalError("stub")
    }
    /// https://developer.apple.com/documentation/foundation/nsfilecoordinator/readingoptions
    public struct ReadingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static var withoutChanges: NSFileCoordinator.ReadingOptions { .init(rawValue: 1) }
        public static var resolvesSymbolicLink: NSFileCoordinator.ReadingOptions { .init(rawValue: 2) }
        public static var immediatelyAvailableMetadataOnly: NSFileCoordinator.ReadingOptions { .init(rawValue: 4) }
        public static var forUploading: NSFileCoordinator.ReadingOptions { .init(rawValue: 8) }
    }
    /// https://developer.apple.com/documentation/foundation/nsfilecoordinator/writingoptions
    public struct WritingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static var forDeleting: NSFileCoordinator.WritingOptions { .init(rawValue: 1) }
        public static var forMoving: NSFileCoordinator.WritingOptions { .init(rawValue: 2) }
        public static var forMerging: NSFileCoordinator.WritingOptions { .init(rawValue: 4) }
        public static var forReplacing: NSFileCoordinator.WritingOptions { .init(rawValue: 8) }
        public static var contentIndependentMetadataOnly: NSFileCoordinator.WritingOptions { .init(rawValue: 16) }
    }
}

// https://developer.apple.com/documentation/foundation/nsfileaccessintent
@available(iOS 8.0, macOS 10.10, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
open class NSFileAccessIntent: NSObject {
    public required override init() { super.init() }
    /// Listed on the class page: `class func readingIntent(with url: URL, options: NSFileCoordinator.ReadingOptions = []) -> Self`
    open class func readingIntent(with url: URL, options: NSFileCoordinator.ReadingOptions = []) -> Self { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsfileaccessintent/writingintent(with:options:)
    open class func writingIntent(with url: URL, options: NSFileCoordinator.WritingOptions = []) -> Self { fatalError("stub") }
    /// https://developer.apple.com/documentation/foundation/nsfileaccessintent/url
    open var url: URL { fatalError("stub") }
}

// MARK: - Durability
// fcntl(2) (Apple's man page, from xnu's bsd/man/man2/fcntl.2): "F_FULLFSYNC Does the same
// thing as fsync(2) then asks the drive to flush all buffered data to the permanent
// storage device". sys/fcntl.h: #define F_FULLFSYNC 51; C macros import as Int32.
public let F_FULLFSYNC: Int32 = 51

// MARK: - Predicates
// swift-corelibs-foundation marks NSPredicate(format:) unavailable; Apple's is
// https://developer.apple.com/documentation/foundation/nspredicate/init(format:_:)
extension NSPredicate {
    @available(iOS 8.0, macOS 10.10, tvOS 9.0, visionOS 1.0, watchOS 2.0, *)
    public convenience init(format predicateFormat: String, _ args: any CVarArg...) { self.init(value: true) }
}
