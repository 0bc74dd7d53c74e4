// swift-tools-version:6.0
import PackageDescription

let applePlatforms: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst]
let otherPlatforms: [Platform] = [.linux, .android, .windows, .openbsd, .wasi]

let package = Package(
    name: "Courier",
    // iOS 16 / macOS 13: Duration, Clock and Task.sleep(for:) need them; nothing newer is used
    // (Synchronization's Mutex, iOS 18, is replaced by the package's own lock).
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        // What an app imports: the engine and the platform's HTTP stack (URLSession on Apple
        // platforms, AsyncHTTPClient elsewhere), by the platform conditions below.
        .library(name: "Courier", targets: ["Courier"]),
        // AsyncHTTPClient as a transport, for Linux, servers and the CLI (SwiftNIO, BoringSSL).
        .library(name: "CourierAsyncHTTPClient", targets: ["CourierAsyncHTTPClient"]),
        .library(name: "CourierOrigin", targets: ["CourierOrigin"]),
        .library(name: "CourierURLSession", targets: ["CourierURLSession"]),
        .library(name: "CourierAttachments", targets: ["CourierAttachments"]),
        .library(name: "CourierDocuments", targets: ["CourierDocuments"]),
        .library(name: "CourierMedia", targets: ["CourierMedia"]),
        // What app code observes: @Observable models for SwiftUI (and ObservableObject,
        // Combine publishers on Apple platforms), Foundation.Progress per download.
        .library(name: "CourierObservation", targets: ["CourierObservation"]),
        .executable(name: "courier", targets: ["courier"]),
        .executable(name: "courier-urlsession", targets: ["courier-urlsession"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.36.0"),   // already AsyncHTTPClient's; named for its error types
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),   // scripts/docs
    ],
    targets: [
        // The engine: no HTTP stack of its own, only the transport seam (swift-http-types).
        .target(
            name: "CourierCore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            resources: [.process("PrivacyInfo.xcprivacy")]   // the required-reason APIs it calls (scripts/privacy-check)
        ),
        .target(
            name: "CourierAsyncHTTPClient",
            dependencies: [
                "CourierCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        // `import Courier`: the engine plus the platform's default transport.
        .target(
            name: "Courier",
            dependencies: [
                "CourierCore",
                .target(name: "CourierURLSession", condition: .when(platforms: applePlatforms)),
                .target(name: "CourierAsyncHTTPClient", condition: .when(platforms: otherPlatforms)),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CourierAttachments",
            dependencies: [
                "Courier",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.process("PrivacyInfo.xcprivacy")]   // the required-reason APIs it calls (scripts/privacy-check)
        ),
        .target(
            name: "CourierDocuments",
            dependencies: [
                "Courier",
                "CourierAttachments",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CourierMedia",
            dependencies: [
                "Courier",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.process("PrivacyInfo.xcprivacy")]   // the required-reason APIs it calls (scripts/privacy-check)
        ),
        .target(
            name: "CourierObservation",
            dependencies: ["CourierCore"]
        ),
        .target(
            name: "CourierURLSession",
            dependencies: [
                "CourierCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CourierOrigin",
            dependencies: [
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.process("PrivacyInfo.xcprivacy")]   // the required-reason APIs it calls (scripts/privacy-check)
        ),
        // The command line, for both executables: `courier` (no FoundationNetworking, so
        // nothing of libcurl is mapped in a plain download) and `courier-urlsession`, which
        // `courier` runs when a command asks for URLSession.
        .target(
            name: "CourierCLI",
            dependencies: [
                "Courier",
                "CourierAsyncHTTPClient",
                "CourierAttachments",
                "CourierDocuments",
                "CourierMedia",
                "CourierOrigin",
                "CourierDraftServer",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(name: "courier", dependencies: ["CourierCLI"]),
        .executableTarget(
            name: "courier-urlsession",
            dependencies: ["CourierCLI", "Courier", "CourierURLSession", .product(name: "Logging", package: "swift-log")]
        ),
        // The example app's model (Examples/CourierDownloads), built and tested here on Linux;
        // its SwiftUI files are type-checked by scripts/examples-check.
        .target(name: "CourierDownloadsModel",
                dependencies: ["Courier", "CourierObservation", "CourierURLSession", .product(name: "GRDB", package: "GRDB.swift")],
                path: "Examples/CourierDownloads/Sources/CourierDownloadsModel"),
        // The IETF resumable upload draft's server through SwiftNIO's own implementation
        // (issue 48): for `courier serve --resumable-uploads-port` and the tests; in no product
        // an app links.
        .target(name: "CourierDraftServer", dependencies: [.product(name: "HTTPTypes", package: "swift-http-types"),
                                                          .product(name: "NIOResumableUpload", package: "swift-nio-extras"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                                                          .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"), .product(name: "NIOCore", package: "swift-nio"),
                                                          .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                                                          .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        // Helpers the test targets share (not a test target itself).
        .target(name: "CourierTestSupport", dependencies: ["Courier", "CourierCore", "CourierURLSession", "CourierDraftServer"], path: "Tests/CourierTestSupport"),
        .testTarget(name: "CourierTests", dependencies: ["Courier", "CourierCore", "CourierAsyncHTTPClient", .product(name: "HTTPTypes", package: "swift-http-types"), "CourierTestSupport", "CourierURLSession", "CourierOrigin", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"), .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTP2", package: "swift-nio-http2")], exclude: ["Fixtures"]),
        .testTarget(name: "CourierAttachmentsTests", dependencies: ["CourierTestSupport", "CourierAttachments", "Courier", "CourierCore", "CourierAsyncHTTPClient", .product(name: "HTTPTypes", package: "swift-http-types"), "CourierOrigin", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")]),
        .testTarget(name: "CourierDocumentsTests", dependencies: ["CourierTestSupport", "CourierDocuments", "CourierAttachments", "Courier", "CourierCore", "CourierOrigin"]),
        .testTarget(name: "CourierMediaTests", dependencies: ["CourierTestSupport", "CourierMedia", "Courier", "CourierCore", "CourierOrigin", "CourierAttachments", "CourierDocuments", "CourierURLSession", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "CourierObservationTests", dependencies: ["CourierTestSupport", "CourierObservation", "Courier", "CourierCore", "CourierOrigin", "CourierDownloadsModel"]),
        .testTarget(name: "CourierOriginTests", dependencies: ["CourierOrigin", .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")]),
        .testTarget(name: "CourierCLITests", dependencies: ["CourierTestSupport", "Courier", "CourierCore", "CourierCLI", "CourierAttachments", "CourierOrigin", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift")],
                    exclude: ["HelpSnapshots"]),
    ]
)
