// swift-tools-version:6.0
import PackageDescription

// The example app, as a package an Xcode app project can depend on (or open directly on a
// Mac: `swift run` shows the window). Its model (CourierDownloadsModel) is portable and is
// built and tested on Linux by the main package; the SwiftUI files are type-checked there
// against Tests/DarwinStubs (scripts/examples-check).
let package = Package(
    name: "CourierDownloads",
    platforms: [.iOS(.v17), .macOS(.v14)],
    dependencies: [
        .package(name: "Courier", path: "../.."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .target(name: "CourierDownloadsModel", dependencies: [
            .product(name: "Courier", package: "Courier"),
            .product(name: "CourierObservation", package: "Courier"),
            .product(name: "CourierURLSession", package: "Courier"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .executableTarget(name: "CourierDownloads", dependencies: [
            "CourierDownloadsModel",
            .product(name: "CourierObservation", package: "Courier"),
            .product(name: "CourierURLSession", package: "Courier"),
        ]),
    ]
)
