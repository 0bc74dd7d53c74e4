import CourierCore
import Logging

extension Downloader {
    /// Makes a downloader over the platform's default transport (``PlatformTransport``),
    /// which it shuts down with itself.
    /// - Parameters:
    ///   - configuration: the root directory and the engine's knobs.
    ///   - database: where records live (Courier's own file, or the app's database).
    ///   - urlRefresher: supplies fresh URLs for expiring links.
    ///   - requestAuthorizer: supplies headers (auth) at request time; never persisted.
    ///   - logger: where the engine logs; secrets are redacted.
    public init(configuration: DownloaderConfiguration, database: CourierDatabase,
                urlRefresher: (any URLRefreshing)? = nil, requestAuthorizer: (any RequestAuthorizing)? = nil,
                logger: Logger = Logger(label: "courier")) {
        self.init(configuration: configuration, database: database, transport: PlatformTransport.make(), owningTransport: true,
                  urlRefresher: urlRefresher, requestAuthorizer: requestAuthorizer, logger: logger)
    }
}

extension Downloader {
    /// A downloader over `transport` (kept by its owner) or, when `nil`, over the platform's
    /// default transport (owned): for the feature targets' initializers that take either.
    package init(configuration: DownloaderConfiguration, database: CourierDatabase, transportOrDefault transport: (any HTTPTransport)?,
                 urlRefresher: (any URLRefreshing)? = nil, requestAuthorizer: (any RequestAuthorizing)? = nil,
                 logger: Logger = Logger(label: "courier")) {
        self.init(configuration: configuration, database: database, transport: transport ?? PlatformTransport.make(),
                  owningTransport: transport == nil, urlRefresher: urlRefresher, requestAuthorizer: requestAuthorizer, logger: logger)
    }
}

/// The transport a service (a storage, a media server) sends its calls through: the one it
/// was given (its owner shuts it down), or the platform's default, which it shuts down.
package struct ServiceTransport: Sendable {
    /// The transport.
    package let transport: any HTTPTransport
    private let owned: Bool

    /// `transport`, or a new default one when `nil`.
    package init(_ transport: (any HTTPTransport)?) {
        self.transport = transport ?? PlatformTransport.make()
        owned = transport == nil
    }

    /// Shuts the transport down when this made it.
    package func shutdown() async throws {
        if owned { try await transport.shutdown() }
    }
}
