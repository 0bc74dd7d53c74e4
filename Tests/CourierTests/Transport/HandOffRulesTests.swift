import Foundation
import HTTPTypes
import Testing
@testable import CourierCore
import CourierURLSession

/// The pure rules of a hand-off's return: which running task a take-back leaves to finish,
/// and how a task resumed from resume data is read.
struct HandOffRulesTests {
    @Test func theTakeBackRuleLeavesOnlyATaskPastTheShare() {
        #expect(!TakeBackRule.leavesToFinish(received: 0, expectedToReceive: 100, share: 0.5))
        #expect(!TakeBackRule.leavesToFinish(received: 49, expectedToReceive: 100, share: 0.5))
        #expect(TakeBackRule.leavesToFinish(received: 50, expectedToReceive: 100, share: 0.5))
        #expect(!TakeBackRule.leavesToFinish(received: 90, expectedToReceive: -1, share: 0.5))   // length unknown
    }

    /// A task resumed from resume data: its file holds everything from the kept bytes while
    /// its reply names the last range asked for. Read as the range from the kept bytes only
    /// when the lengths say exactly that.
    @Test func aResumedTasksReplyIsReadAsTheRangeItsFileHolds() {
        let headers: HTTPFields = [.contentRange: "bytes 600-999/1000", .contentLength: "400", .eTag: "\"v1\""]
        let whole = Downloader.resumedTaskHeaders(status: 206, headers, bodyLength: 900, kept: 100)
        #expect(whole?[.contentRange] == "bytes 100-999/1000" && whole?[.contentLength] == "900" && whole?[.eTag] == "\"v1\"")
        #expect(Downloader.resumedTaskHeaders(status: 206, headers, bodyLength: 400, kept: 100) == nil)   // the file is the range itself
        #expect(Downloader.resumedTaskHeaders(status: 206, headers, bodyLength: 899, kept: 100) == nil)   // a byte short: not that
        #expect(Downloader.resumedTaskHeaders(status: 200, headers, bodyLength: 900, kept: 100) == nil)
        #expect(Downloader.resumedTaskHeaders(status: 206, [.contentRange: "bytes 100-999/1000"], bodyLength: 900, kept: 100) == nil)
        // Judged afterwards like any reply: appended at the kept bytes.
        let plan = ResumePlan(partialLength: 100, etag: "\"v1\"", lastModified: nil, totalBytes: 1000, resumable: true)
        guard case let .write(reply) = ResponseDisposition.decide(plan: plan, status: 206, headers: whole ?? [:]) else {
            Issue.record("not written"); return
        }
        #expect(reply.offset == 100 && reply.expectedBodyLength == 900)
    }
}
