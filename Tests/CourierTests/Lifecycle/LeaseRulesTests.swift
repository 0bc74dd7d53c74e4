import Foundation
import Testing
@testable import CourierCore

/// The lease rules with the world injected: which owners count as alive.
@Suite struct LeaseRulesTests {
    /// A made-up host where pid 10 runs (started at 500), 11 is a zombie, 12 is gone, 13
    /// cannot be told.
    static let world = ProcessLiveness(
        hostName: "here",
        state: { pid in [10: .running, 11: .zombie, 12: .gone][pid] ?? .unknown },
        startTime: { pid in pid == 10 ? 500 : nil })
    static let me = LeaseOwner(id: "here:99:mine:1", liveness: world)

    static func leased(by owner: String, expiresIn seconds: TimeInterval) -> DownloadRecord {
        var r = DownloadRecord(id: "r", remoteUrl: "http://h/f", localFinalPath: "f", partialPath: "f.partial")
        r.state = .downloading
        r.leaseOwner = owner
        r.leaseExpiresAt = Date(timeIntervalSince1970: 1000 + seconds)
        return r
    }

    @Test(arguments: [
        ("here:10:aaaa:500", 60.0, true),      // running, same start time: alive
        ("here:10:aaaa", 60.0, true),          // an older id without a start time: running counts
        ("here:10:aaaa:400", 60.0, false),     // pid 10 now belongs to a later process: reused
        ("here:11:aaaa:1", 60.0, false),       // a zombie renews nothing
        ("here:12:aaaa:1", 60.0, false),       // gone
        ("here:13:aaaa:1", 60.0, true),        // cannot be told: alive until expiry
        ("there:12:aaaa:1", 60.0, true),       // another host: alive until expiry
        ("here:10:aaaa:500", -1.0, false),     // expired
        ("here:99:mine:1", 60.0, false),       // our own lease never blocks us
        ("garbage", 60.0, true),               // unreadable: alive until expiry
    ])
    func whoBlocks(_ owner: String, _ expiresIn: TimeInterval, _ blocks: Bool) {
        #expect(Self.me.isBlocked(by: Self.leased(by: owner, expiresIn: expiresIn), now: Date(timeIntervalSince1970: 1000)) == blocks)
    }

    @Test func aFreshOwnerRecordsItsStartTime() {
        let owner = LeaseOwner.make(liveness: ProcessLiveness(hostName: "h", state: { _ in .running }, startTime: { _ in 777 }))
        let parts = owner.id.split(separator: ":")
        #expect(parts.count == 4 && parts[0] == "h" && parts[1] == "\(getpid())" && parts[3] == "777")
    }

    #if os(Linux)
    /// The real process table: a child that exited and was not reaped is a zombie, not alive.
    @Test func aRealZombieIsNotAlive() throws {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&pid, "/bin/true", nil, nil, argv, nil) == 0)
        defer { var status: Int32 = 0; waitpid(pid, &status, 0) }
        var state = ProcessLiveness.State.running
        for _ in 0..<200 where state != .zombie {
            usleep(10_000)
            state = ProcessLiveness.system.state(pid)
        }
        #expect(state == .zombie)
        #expect(ProcessLiveness.system.state(getpid()) == .running)
        #expect(ProcessLiveness.system.startTime(getpid()) != nil)
        let host = ProcessLiveness.system.hostName
        #expect(!LeaseOwner.make().mayBeAlive("\(host):\(pid):zzzz"))
    }
    #endif
}
