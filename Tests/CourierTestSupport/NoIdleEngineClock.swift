import CourierCore
import Foundation

/// The system's clock, except that the idle watchdog's window never ends (issue 46): the
/// integration fixture's default for a test that leaves the idle timeout alone, because it
/// counts requests or attempts of downloads that are never meant to stall. A loaded machine
/// can hold the whole test process longer than any idle window (18 s once, in a CI run's
/// first seconds); the watchdog then aborted an attempt whose reply was on its way, and the
/// retry made one request more than the test counted. A test of the watchdog sets an idle
/// timeout of its own, or uses ``ManualEngineClock``.
package struct NoIdleEngineClock: EngineClock {
    package init() {}
    package var now: ContinuousClock.Instant { .now }
    package func sleep(until deadline: ContinuousClock.Instant, for purpose: EngineWait) async throws {
        guard purpose == .idleWindow else { return try await SystemEngineClock().sleep(until: deadline, for: purpose) }
        _ = await untilCancelled(atMost: .seconds(86_400))   // the watchdog is cancelled when its attempt ends
        throw CancellationError()
    }
}
