import Foundation

/// How a ``Downloader`` behaves.
public struct DownloaderConfiguration: Sendable {
    /// The directory every record's paths are relative to.
    public var rootDirectory: URL
    /// Downloads running at once (default 4).
    public var maxConcurrentDownloads: Int = 4
    /// Whether ``Downloader/start()`` resumes queued and interrupted downloads (default on).
    public var autoResume: Bool = true
    /// Backoff for passing failures.
    public var retryPolicy: RetryPolicy = RetryPolicy()
    /// An attempt with no byte for this long is aborted and retried (default 30 s).
    public var idleTimeout: Duration = .seconds(30)
    /// Free space kept beyond the bytes still to come (default 100 MiB) for a large file; a
    /// smaller one keeps its own size free (at least 1 MiB), so a small file is not refused
    /// for want of the whole reserve.
    public var freeSpaceReserve: Int64 = 100 << 20
    /// The largest file accepted; a body past it fails with ``CourierError/Code/bodyTooLong``.
    public var maxFileSize: Int64? = nil
    /// The most bytes per second one download may take, all its connections together
    /// (curl's `--limit-rate`); `nil`: as fast as it comes.
    public var maxBytesPerSecond: Int64? = nil
    /// How often progress is written to the database while bytes flow (default 1 s).
    public var progressPersistInterval: Duration = .seconds(1)
    /// How often progress events are published while bytes flow (default 0.1 s).
    public var progressEventInterval: Duration = .milliseconds(100)
    /// Redirects followed per request (default 5). Never from https to http.
    public var maxRedirects: Int = 5
    /// The size of each gathered write to the partial file (default 512 KiB; two such
    /// buffers, one filling while the other is written). Larger buffers bought no speed on
    /// the bench's 1 GiB (BENCHMARKS.md) and cost a phone memory per running download.
    public var writeBufferSize: Int = 512 << 10
    /// Restarts from zero in a row (200 to a range, changed validator, …) before failing.
    public var maxRestarts: Int = 5

    /// The clock every timed wait of the engine reads (``EngineClock``): the system's, or a
    /// test's that moves only when the test says.
    package var clock: any EngineClock = SystemEngineClock()

    /// The retry backoff's jitter, a number in 0...1 per wait: random, or the simulator's
    /// drawn from its seed (so the same seed waits the same).
    package var retryJitter: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// Told of every event as it is published (the simulator's journal); none in an app.
    package var eventTap: (@Sendable (DownloadEvent) -> Void)? = nil

    /// The lease owner this downloader writes, or a fresh one for this process (`nil`, as in
    /// an app): the simulator gives each simulated process its own, judged alive or killed
    /// by a liveness of its own.
    package var leaseOwner: LeaseOwner? = nil

    /// Connections per download when a request does not say (default 1); see
    /// ``DownloadRequest/connections``.
    public var connectionsPerDownload: Int = 1
    /// The smallest byte range a segmented download splits off (default 4 MiB): a file
    /// under twice this size is fetched over one connection.
    public var minSegmentSize: Int64 = 4 << 20
    /// The gathered write per segment of a segmented download (default 1 MiB).
    public var segmentBufferSize: Int = 1 << 20
    /// How long a running download's lease lasts without renewal (default 15 s); it is
    /// renewed every third of that. Another process takes a lease over once it expires.
    public var leaseDuration: Duration = .seconds(15)
    /// Fault injection for chaos tests only: a pause between the rename of the finished
    /// file and the record's update to completed, so a kill can land in that window.
    /// Not part of the public API (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var pauseAfterRename: Duration? = nil
    /// For tests only: a pause after the record is completed, before the run reports it,
    /// so a stop can arrive in that window (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var pauseAfterCompleting: Duration? = nil
    /// For tests only: awaited as a finished body is about to complete its record, before the
    /// run claims its end against the lease heartbeat, so a test can act in that window
    /// (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var beforeCompleting: (@Sendable () async -> Void)? = nil
    /// For tests only: awaited after a finished small download's unnamed partial is named,
    /// before the completing write that renames it, so a test can act in that window
    /// (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var afterNaming: (@Sendable () async -> Void)? = nil
    /// For tests only: called around a completing write that renames the file (a completion
    /// hook's, or one over a file already there): `.waiting` as it is issued (it may wait for
    /// the database), `.renamed` inside it after the rename, before the commit (it may block
    /// there, holding the write open); with whether a stop has reached the run since
    /// (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var onCompletingWrite: (@Sendable (_ phase: CompletingWritePhase, _ stopped: @escaping @Sendable () -> Bool) -> Void)? = nil
    /// For tests only: awaited in a restart from zero between its record write (ranges
    /// forgotten, validators and size cleared) and the partial's deletion; a stop that
    /// reaches the run there ends it before the deletion, as a kill would
    /// (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var duringRestart: (@Sendable () async -> Void)? = nil
    /// Whether full buffers of a single-connection download are written with `O_DIRECT`
    /// where the system has it (default on; BENCHMARKS.md). A switch for benchmarks and
    /// tests only (`@_spi(Testing) import Courier`).
    @_spi(Testing) public var usesDirectIO: Bool = true

    /// Makes a configuration for a root directory.
    public init(rootDirectory: URL) {
        self.rootDirectory = rootDirectory.standardizedFileURL
    }
}

/// Where a completing write that renames the file is (``DownloaderConfiguration/onCompletingWrite``).
@_spi(Testing) public enum CompletingWritePhase: Sendable { case waiting, renamed }
