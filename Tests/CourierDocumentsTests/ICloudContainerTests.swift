import Courier
import Foundation
import Testing
@testable import CourierDocuments

/// A scripted stand-in for iCloud Drive: metadata snapshots, downloads, evictions and
/// coordination as a test dictates, on threads of its own as the system's are.
final class ScriptedUbiquity: UbiquityService, @unchecked Sendable { // state behind `state`
    struct State {
        var update: (@Sendable ([UbiquityItem]) -> Void)?
        var monitoring = 0, stopped = 0
        var starts: [URL] = []
        var evicted: [URL] = []
        var coordinations: [(url: URL, writing: Bool)] = []
        var coordinationError: NSError?
        var accessorThreads: [Bool] = []   // was the accessor on a Swift concurrency thread?
        var onStart: (@Sendable (URL, Int) -> Void)?
    }
    let documentsURL: URL
    let state = Locked(State())

    init(root: URL) { documentsURL = root }

    func startMonitoring(_ update: @escaping @Sendable ([UbiquityItem]) -> Void) {
        state.withLock { $0.update = update; $0.monitoring += 1 }
    }
    func stopMonitoring() { state.withLock { $0.update = nil; $0.stopped += 1 } }
    func startDownloading(_ url: URL) throws {
        let (count, action) = state.withLock { s -> (Int, (@Sendable (URL, Int) -> Void)?) in s.starts.append(url); return (s.starts.count, s.onStart) }
        action?(url, count)
    }
    func evict(_ url: URL) throws { state.withLock { $0.evicted.append(url) } }
    func coordinate(_ url: URL, writing: Bool, accessor: @escaping @Sendable (URL) -> Void) async throws {
        let error = state.withLock { s -> NSError? in s.coordinations.append((url, writing)); return s.coordinationError }
        if let error { throw error }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                accessor(url)
                done.resume()
            }.start()
        }
    }

    /// Publishes a metadata snapshot, as the query's notifications would.
    func publish(_ items: [UbiquityItem]) { state.withLock { $0.update }?(items) }
    func item(_ relative: String, _ status: UbiquityDownloadingStatus?, _ percent: Double? = nil, downloading: Bool? = nil, error: UbiquityError? = nil) -> UbiquityItem {
        UbiquityItem(path: documentsURL.appendingPathComponent(relative).path, downloadingStatus: status, percentDownloaded: percent, isDownloading: downloading, downloadingError: error)
    }
}

@Suite struct ICloudContainerTests {
    let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("courier-icloud-\(UUID().uuidString)")

    private func world() throws -> (ScriptedUbiquity, ICloudContainer) {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let service = ScriptedUbiquity(root: root)
        return (service, ICloudContainer(service: service))
    }

    private func documents(_ c: ICloudContainer, idle: Duration = .seconds(600), retriggers: Int = 2) -> Documents {
        var o = DocumentsOptions()
        o.pollInterval = .milliseconds(5)
        o.idleTimeout = idle
        o.maxRetriggers = retriggers
        return Documents(container: c, options: o)
    }

    private func placeholder(_ name: String) throws {
        try Data().write(to: root.appendingPathComponent(".\(name).icloud"))
    }

    /// Unknown → not downloaded → downloading 10, 40, 80 → current, then the read.
    @Test(.timeLimit(.minutes(1))) func aFullStatusSequenceEndsInARead() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try placeholder("a.txt")
        let file = root.appendingPathComponent("a.txt")
        // Each percent is published once the reader has seen the one before (the time's limit
        // ends a reader that never does).
        let (shown, show) = AsyncStream<Double>.makeStream()
        service.state.withLock { $0.onStart = { _, _ in
            Task {
                service.publish([service.item("a.txt", .notDownloaded, 0, downloading: false)])
                var seen = shown.makeAsyncIterator()
                for percent in [10.0, 40, 80] {
                    service.publish([service.item("a.txt", .notDownloaded, percent, downloading: true)])
                    while let p = await seen.next(), p < percent {}
                }
                try Data("hello".utf8).write(to: file)
                service.publish([service.item("a.txt", .current, 100)])
            }
        } }
        let docs = documents(container)
        let progress = Task {
            var seen: [Double] = []
            for try await p in docs.downloadProgress("a.txt") { seen.append(p); show.yield(p) }
            return seen
        }
        #expect(try await docs.readInPlace("a.txt") == "hello")
        let seen = try await progress.value
        #expect(seen.last == 100 && seen == seen.sorted() && [10, 40, 80].allSatisfy(seen.contains), "\(seen)")
        // The read was coordinated, and its accessor never ran on a Swift concurrency thread.
        #expect(service.state.withLock { $0.coordinations.map(\.writing) } == [false])
        // Triggered while the status was still unknown: no idle window (600 s here) waited.
        #expect(service.state.withLock { $0.starts.count } == 1)
    }

    @Test func aStalledDownloadTimesOutAfterTheConfiguredRetriggers() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try placeholder("stuck.bin")
        service.publish([service.item("stuck.bin", .notDownloaded, 10, downloading: true)])
        let docs = documents(container, idle: .milliseconds(100), retriggers: 2)
        await #expect { try await docs.readInPlaceBytes("stuck.bin") } throws: { ($0 as? CourierError)?.code == .timeout }
        #expect(service.state.withLock { $0.starts.count } == 3)   // the first trigger and two more
    }

    @Test func aLongHealthyTransferIsNeverIdle() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try placeholder("big.bin")
        let file = root.appendingPathComponent("big.bin")
        // 3 s of steady progress (a step every 50 ms) under a 1 s idle window with no
        // retrigger allowed: every percent that moves is progress. (Before, only status
        // changes counted, and this read failed with E_TIMEOUT after 1 s.) The transfer runs
        // on a thread of its own, as iCloud's does: a reader starved by a loaded machine
        // still finds the percent moved when it looks again.
        service.state.withLock { $0.onStart = { _, _ in
            Thread {
                for step in 1...60 {
                    service.publish([service.item("big.bin", .notDownloaded, Double(step) * 1.6, downloading: true)])
                    usleep(50_000)
                }
                try? Data(count: 1000).write(to: file)
                service.publish([service.item("big.bin", .current, 100)])
            }.start()
        } }
        let data = try await documents(container, idle: .seconds(1), retriggers: 0).readInPlaceBytes("big.bin")
        #expect(data.count == 1000)
        #expect(service.state.withLock { $0.starts.count } == 1)
    }

    @Test func aMissingFileIsNotFoundWithoutATrigger() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        // Nothing on disk and no metadata: no trigger; the coordinated read decides.
        service.state.withLock { $0.coordinationError = NSError(domain: NSCocoaErrorDomain, code: 4) }
        let error = await #expect(throws: CourierError.self) { try await documents(container).readInPlace("nope.txt") }
        #expect(error?.code == .fileNotFound)
        #expect(service.state.withLock { $0.starts.isEmpty })
        #expect(!container.entryExists("nope.txt"))
        // A placeholder counts as existing (iCloud's .name.icloud).
        try placeholder("later.txt")
        #expect(container.entryExists("later.txt"))
    }

    @Test func aDownloadErrorFailsTheReadAndProgress() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try placeholder("gone.txt")
        service.publish([service.item("gone.txt", .notDownloaded, error: UbiquityError(domain: NSCocoaErrorDomain, code: 260, message: "gone"))])
        let docs = documents(container)
        await #expect { try await docs.readInPlace("gone.txt") } throws: { ($0 as? CourierError)?.code == .fileRead }
        await #expect { for try await _ in docs.downloadProgress("gone.txt") {} } throws: { ($0 as? CourierError)?.code == .fileRead }
    }

    /// Seed 004: errors other than the named ones stay native. A quota error reaches the app
    /// as iCloud's own domain and code (`E_SYSTEM` beside it), through the read and the
    /// progress stream alike.
    @Test func anotherDownloadErrorReachesTheAppAsTheSystemsOwn() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try placeholder("big.mov")
        let quota = UbiquityError(domain: NSCocoaErrorDomain, code: 4354, message: "over quota", underlying: (domain: "CKErrorDomain", code: 25))
        service.publish([service.item("big.mov", .notDownloaded, error: quota)])
        let docs = documents(container)
        let expected = SystemError(domain: NSCocoaErrorDomain, code: 4354, underlyingDomain: "CKErrorDomain", underlyingCode: 25)
        await #expect { try await docs.readInPlace("big.mov") } throws: { ($0 as? CourierError)?.code == .system && ($0 as? CourierError)?.system == expected }
        await #expect { for try await _ in docs.downloadProgress("big.mov") {} } throws: { ($0 as? CourierError)?.system == expected }
    }

    @Test func aReadStreamsInChunksUnderCoordination() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        let data = Data((0..<(5 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try data.write(to: root.appendingPathComponent("movie.bin"))
        service.publish([service.item("movie.bin", .current, 100)])
        var chunks = 0, largest = 0
        var joined = Data()
        for try await chunk in documents(container).readInPlaceStream("movie.bin", chunkSize: 64 << 10) {
            chunks += 1
            largest = max(largest, chunk.count)
            joined.append(chunk)
        }
        #expect(joined == data)
        #expect(largest <= 64 << 10 && chunks == 80)   // never more than one chunk read at a time
        #expect(service.state.withLock { $0.coordinations.count } == 1)
    }

    @Test func writesAreCoordinatedAndErrorsMapped() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try await container.coordinatedWrite("w.txt", data: Data("x".utf8))
        #expect(try Data(contentsOf: root.appendingPathComponent("w.txt")) == Data("x".utf8))
        #expect(service.state.withLock { $0.coordinations.last?.writing } == true)
        // A missing folder: the write itself fails with ENOENT beneath a Cocoa write error.
        let error = await #expect(throws: CourierError.self) { try await container.coordinatedWrite("no/such/dir/w.txt", data: Data("x".utf8)) }
        #expect(error?.code == .fileWrite, "\(String(describing: error))")
        // No permission stays native.
        service.state.withLock { $0.coordinationError = NSError(domain: NSCocoaErrorDomain, code: 513) }
        do {
            try await container.coordinatedWrite("w.txt", data: Data("y".utf8))
            Issue.record("expected a failure")
        } catch {
            #expect(!(error is CourierError) && (error as NSError).code == 513)
        }
    }

    @Test func theMetadataWatchEndsWithTheContainer() async throws {
        let service: ScriptedUbiquity
        weak var gone: ICloudContainer?
        do {
            let (s, container) = try world()
            service = s
            gone = container
            #expect(s.state.withLock { $0.monitoring == 1 && $0.update != nil })
        }
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(gone == nil)
        #expect(service.state.withLock { $0.stopped == 1 && $0.update == nil })
        service.publish([service.item("x", .current)])   // nothing left to call: no crash
    }

    @Test func evictionGoesToTheService() async throws {
        let (service, container) = try world()
        defer { try? FileManager.default.removeItem(at: root) }
        try await container.evict("a/b.txt")
        #expect(service.state.withLock { $0.evicted } == [root.appendingPathComponent("a/b.txt")])
        await #expect(throws: CourierError.self) { try await container.evict("../escape") }
    }
}

/// The pure rules, table by table.
@Suite struct ICloudRulesTests {
    let e4353 = UbiquityError(domain: "NSCocoaErrorDomain", code: 4353, message: "not uploaded yet")
    let e4355 = UbiquityError(domain: "NSCocoaErrorDomain", code: 4355, message: "server unavailable")

    @Test func statusFromMetadata() {
        func s(_ i: UbiquityItem?) -> DocumentDownloadStatus? { ICloudStatus.state(of: i).status }
        #expect(s(nil) == nil)
        #expect(s(UbiquityItem(path: "/r/a")) == nil)
        #expect(s(UbiquityItem(path: "/r/a", isDownloading: true)) == .downloading)
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .notDownloaded)) == .notDownloaded)
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .notDownloaded, percentDownloaded: 30)) == .downloading)
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .notDownloaded, percentDownloaded: 30, isDownloading: false)) == .notDownloaded)
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .downloaded, isDownloading: true)) == .downloading)
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .downloaded)) == .notDownloaded)   // a newer version waits
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .current)) == .current)
        #expect(ICloudStatus.state(of: UbiquityItem(path: "/r/a", downloadingStatus: .current)).percent == 100)
        // Not uploaded yet by its device: wait and retrigger, never "not found".
        #expect(s(UbiquityItem(path: "/r/a", downloadingStatus: .notDownloaded, downloadingError: e4353)) == .notDownloaded)
        guard case let .failed(error)? = s(UbiquityItem(path: "/r/a", downloadingError: e4355)) else { Issue.record("expected failed"); return }
        // Any other error stays the system's: its domain and code, beside Courier's code.
        #expect(error.code == .system && error.message.contains("4355"))
        #expect(error.system == SystemError(domain: "NSCocoaErrorDomain", code: 4355))
        #expect(error.system?.nsError.domain == "NSCocoaErrorDomain" && error.system?.nsError.code == 4355)
    }

    @Test(arguments: [
        (4, CocoaFileErrors.Operation.read, "E_FNF"),
        (4, .other, "E_FNF"),
        (4, .write, "E_FNF_WRITE"),
        (260, .read, "E_FNF_READ"),
        (260, .write, "E_FNF_READ"),
        (513, .write, nil),
        (256, .read, nil),
        (3072, .other, nil),
    ] as [(Int, CocoaFileErrors.Operation, String?)])
    func cocoaErrorTable(code: Int, operation: CocoaFileErrors.Operation, expected: String?) {
        let mapped = CocoaFileErrors.courierError(UbiquityError(domain: "NSCocoaErrorDomain", code: code, message: ""), during: operation, path: "p")
        #expect(mapped?.code.rawValue == expected)
    }

    @Test func writeErrorsWithENOENTBeneathAreNoSuchFileOnWrite() {
        let write = UbiquityError(domain: "NSCocoaErrorDomain", code: 512, message: "", underlying: ("NSPOSIXErrorDomain", Int(ENOENT)))
        #expect(CocoaFileErrors.courierError(write, during: .write, path: "p")?.code == .fileWrite)
        #expect(CocoaFileErrors.courierError(write, during: .read, path: "p") == nil)
        let otherDomain = UbiquityError(domain: "NSPOSIXErrorDomain", code: 4, message: "")
        #expect(CocoaFileErrors.courierError(otherDomain, during: .read, path: "p") == nil)
        // Through `map`, the native error stays beneath.
        let native = NSError(domain: NSCocoaErrorDomain, code: 260)
        let mapped = CocoaFileErrors.map(native, during: .read, path: "p") as? CourierError
        #expect(mapped?.code == .fileRead && mapped?.underlying?.contains("260") == true)
        #expect(!(CocoaFileErrors.map(NSError(domain: NSCocoaErrorDomain, code: 513), during: .write, path: "p") is CourierError))
        // A coordination given up because the task was cancelled (NSFileCoordinator.cancel()).
        #expect(CocoaFileErrors.map(NSError(domain: NSCocoaErrorDomain, code: 3072), during: .read, path: "p") is CancellationError)
    }

    @Test func metadataPathsMatchWhateverSpellingOfVar() {
        #expect(ICloudStatus.relativePath("/private/var/mobile/Docs/a/b.txt", root: "/var/mobile/Docs") == "a/b.txt")
        #expect(ICloudStatus.relativePath("/var/mobile/Docs/a.txt", root: "/private/var/mobile/Docs/") == "a.txt")
        #expect(ICloudStatus.relativePath("/var/mobile/Docs/./x/../a.txt", root: "/var/mobile/Docs") == "a.txt")
        #expect(ICloudStatus.relativePath("/var/mobile/Docs2/a.txt", root: "/var/mobile/Docs") == nil)
        #expect(ICloudStatus.relativePath("/var/mobile/Docs", root: "/var/mobile/Docs") == nil)
        #expect(ICloudStatus.relativePath("/private/tmp/D/a", root: "/tmp/D") == "a")
    }

    @Test func aContainerUnderPrivateVarSeesItsItems() async throws {
        // The index reports "/private" + the root (as on a device); the container keys match.
        let root = URL(fileURLWithPath: "/var/tmp/courier-icloud-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let service = ScriptedUbiquity(root: root)
        let container = ICloudContainer(service: service)
        service.publish([UbiquityItem(path: "/private" + root.path + "/a.txt", downloadingStatus: .current)])
        #expect(await container.state(of: "a.txt").status == .current)
    }
}
