import Courier
import Foundation
import Testing
@testable import CourierDocuments

/// The idle watchdog counts only what it saw: a process starved of CPU (or suspended) for
/// longer than the idle window does not time out a transfer that moved before and after.
/// A timing test: scripts/test runs the `…TimingTests` suites alone, after the rest.
@Suite struct WatchdogTimingTests {
    /// A transfer that moves at every look but one, which takes `stall` (the process got no
    /// CPU meanwhile) and shows no movement.
    final class StarvedContainer: DocumentContainer, @unchecked Sendable { // state only touched under the lock
        let root = URL(fileURLWithPath: "/nonexistent")
        let stall: Duration
        private let looks = Locked(0)
        init(stall: Duration) { self.stall = stall }

        func entryExists(_ path: String) -> Bool { true }
        func startDownloading(_ path: String, restart: Bool) async throws {
            if restart { Issue.record("re-triggered a transfer that was moving") }
        }
        func state(of path: String) async -> DocumentState {
            let n = looks.withLock { $0 += 1; return $0 }
            if n == 5 { try? await Task.sleep(for: stall) }   // the starved moment; a cancelled test ends the sleep early
            if n >= 40 { return DocumentState(status: .current, percent: 100) }
            return DocumentState(status: .downloading, percent: nil, bytesReceived: Int64(n == 5 ? 4 : n) * 1000)   // the stalled look shows no movement
        }
        func coordinatedRead(_ path: String) async throws -> Data { Data("done".utf8) }
        func coordinatedRead(_ path: String, chunkSize: Int, _ body: @Sendable (Data) async throws -> Void) async throws { try await body(Data("done".utf8)) }
        func coordinatedWrite(_ path: String, data: Data) async throws {}
    }

    @Test func aStarvedProcessDoesNotTimeOutAMovingTransfer() async throws {
        var options = DocumentsOptions()
        options.idleTimeout = .milliseconds(600)
        options.maxRetriggers = 0
        options.pollInterval = .milliseconds(20)
        let docs = Documents(container: StarvedContainer(stall: .milliseconds(1500)), options: options)
        #expect(try await docs.readInPlace("a.txt") == "done")
    }
}
