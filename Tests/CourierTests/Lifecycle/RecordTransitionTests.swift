import Foundation
import GRDB
import Testing
@testable import CourierCore

/// The record's named transitions keep its invariants; the bulk SQL requeue is the same
/// change as the Swift one.
@Suite struct RecordTransitionTests {
    static let owner = LeaseOwner(id: "host:1:aaaa")

    static func running() -> DownloadRecord {
        var r = DownloadRecord(id: "r", remoteUrl: "http://h/f", localFinalPath: "f", partialPath: "f.partial")
        r.claim(by: owner, until: Date().addingTimeInterval(60))
        r.noteFailedAttempt(CourierError(.network, "reset"), keeping: 10)
        return r
    }

    /// A completion releases the lease; every other end clears its expiry and keeps its owner
    /// as the partial's last writer, whose run may still have it open (a run taking over
    /// then copies the partial first), until that run releases it (`releaseLease(ifHeldBy:)`).
    @Test func everyWayOutOfDownloadingEndsTheLease() {
        let ends: [(String, (inout DownloadRecord) -> Void, DownloadState, released: Bool)] = [
            ("complete", { $0.complete(length: 20) }, .completed, true),
            ("fail", { $0.fail(CourierError(.tls, "bad cert"), keeping: 12) }, .failed, false),
            ("pause", { $0.pause(keeping: 12) }, .paused, false),
            ("requeue", { $0.requeue(keeping: 12, freshStart: false) }, .queued, false),
            ("hand off", { $0.handOff(keeping: 12) }, .handedOff, false),
        ]
        for (name, change, state, released) in ends {
            var r = Self.running()
            change(&r)
            #expect(r.state == state, "\(name)")
            #expect(r.leaseExpiresAt == nil && !LeaseOwner(id: "other:2:bbbb").isBlocked(by: r), "\(name)")
            #expect(r.leaseOwner == (released ? nil : Self.owner.id), "\(name)")
            var released = r
            released.releaseLease(ifHeldBy: LeaseOwner(id: "other:2:bbbb"))
            #expect(released.leaseOwner == r.leaseOwner, "\(name): another's release took the last writer")
            released.releaseLease(ifHeldBy: Self.owner)
            #expect(released.leaseOwner == nil && released.leaseExpiresAt == nil, "\(name)")
        }
    }

    @Test func claimingClearsTheLastErrorAndCompletingForgetsTheHeldVersion() {
        var r = Self.running()
        #expect(r.lastErrorCode == "E_NETWORK" && r.attemptCount == 1 && r.bytesReceived == 10)
        r.claim(by: Self.owner, until: Date())
        #expect(r.lastErrorCode == nil && r.lastErrorMessage == nil && r.state == .downloading && r.leaseOwner == Self.owner.id)
        r.heldEtag = "\"v1\""; r.heldBytes = 5
        r.complete(length: 20)
        #expect(r.heldEtag == nil && r.heldBytes == nil && r.totalBytes == 20 && r.bytesReceived == 20)
    }

    @Test func resetToZeroForgetsTheVersion() {
        var r = Self.running()
        r.etag = "\"e\""; r.lastModified = "x"; r.totalBytes = 99; r.resumable = false
        r.resetToZero(countingAttempt: true)
        #expect(r.bytesReceived == 0 && r.etag == nil && r.lastModified == nil && r.totalBytes == nil && r.resumable && r.attemptCount == 2)
    }

    /// `requeue(keeping: nil, freshStart: state == .failed)` and the SQL bulk requeue leave
    /// identical rows, for every state the bulk requeue takes.
    @Test(arguments: [DownloadState.queued, .downloading, .paused, .failed])
    func theBulkRequeueIsTheSwiftRequeue(_ state: DownloadState) async throws {
        var before = Self.running()
        before.state = state
        before.lastErrorCode = "E_X"; before.lastErrorMessage = "x"; before.attemptCount = 4
        before.leaseExpiresAt = Date().addingTimeInterval(-5)   // expired: the requeue takes it
        var expected = before
        expected.requeue(keeping: nil, freshStart: state == .failed)

        let db = try CourierDatabase.inMemory()
        let row = before
        try await db.write { try row.insert($0) }
        _ = try await db.requeue(states: [state], owner: LeaseOwner(id: "other:2:bbbb"), excluding: [])
        let after = try #require(try await db.record(id: "r"))
        #expect(after.state == expected.state && after.leaseOwner == expected.leaseOwner && after.leaseExpiresAt == expected.leaseExpiresAt)
        #expect(after.attemptCount == expected.attemptCount && after.lastErrorCode == expected.lastErrorCode && after.lastErrorMessage == expected.lastErrorMessage)
        #expect(after.bytesReceived == expected.bytesReceived)
    }
}
