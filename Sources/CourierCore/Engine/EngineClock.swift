/// What the engine waits for: every timed wait of a run and of the scheduler names its
/// purpose, so a test clock can tell which wait it is releasing (and a trace can say so).
package enum EngineWait: String, Sendable, CaseIterable {
    /// Between attempts: the retry policy's backoff or the server's `Retry-After`.
    case backoff
    /// The idle watchdog's deadline: no byte for `idleTimeout` aborts the attempt.
    case idleWindow
    /// The lease heartbeat: renewed every third of `leaseDuration`.
    case heartbeat
    /// A progress tick: events every `progressEventInterval`, a segmented download's
    /// progress written every `progressPersistInterval`.
    case progressTick
    /// The scheduler's retry of a queue refill that failed (an unreadable database).
    case queueRefill
    /// `maxBytesPerSecond`: the body waits until its bytes are due.
    case rateLimit
    /// A test's pause inside a run (`pauseAfterRename`, `pauseAfterCompleting`).
    case testPause
    /// Not the engine's own: a simulated network's delay (the simulator's transport), on
    /// the same clock as the engine's waits.
    case simulatedNetwork
}

/// The one clock the engine reads time from and waits on (issue 46): the system's
/// continuous clock in an app, a test's clock that moves only when the test says
/// (`ManualEngineClock` in CourierTestSupport), so a timing rule is checked without a
/// wall-clock window that a loaded machine can miss. Instants are `ContinuousClock`'s, so
/// durations and deadlines read the same under either.
///
/// What does not read it: lease expiry (a wall-clock date in the database, compared by
/// other processes; its heartbeat does read it, so a test that stops time for longer than a
/// lease lets it run out), the measured speed of a body (bytes per second of real time), and
/// the keep-alive window of `StaleConnection` (when a failure before the reply is resent
/// uncounted).
package protocol EngineClock: Sendable {
    /// Now.
    var now: ContinuousClock.Instant { get }
    /// Returns at `deadline` (at once when it has passed); throws `CancellationError` when
    /// the calling task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant, for purpose: EngineWait) async throws
}

extension EngineClock {
    /// Returns after `duration`, as ``sleep(until:for:)``.
    package func sleep(for duration: Duration, _ purpose: EngineWait) async throws {
        try await sleep(until: now + duration, for: purpose)
    }
}

/// The system's continuous clock: what every downloader uses unless a test gives another.
package struct SystemEngineClock: EngineClock {
    package init() {}
    package var now: ContinuousClock.Instant { .now }
    package func sleep(until deadline: ContinuousClock.Instant, for purpose: EngineWait) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
