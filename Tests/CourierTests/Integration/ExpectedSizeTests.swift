import Foundation
import Testing
@testable import CourierCore
import CourierOrigin

/// `DownloadRequest.expectedSize` against the live origin: a reply of another size is
/// refused before a byte is written; one of unannounced length is held to the size.
@Suite(.serialized) struct ExpectedSizeTests {
    @Test func aReplyOfAnotherSizeFailsAtOnceAndTheFileInPlaceStays() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("f.bin", size: 2 << 20)
        // An earlier copy at the destination (another download's, or the user's) is untouched.
        let earlier = Data("the copy that was there".utf8)
        try earlier.write(to: fx.root.appendingPathComponent("f.bin"))
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: 3 << 20))
        do {
            _ = try await d.waitForCompletion(id: "x")
            Issue.record("a 2 MiB reply was taken for a 3 MiB file")
        } catch let error as CourierError {
            #expect(error.code == .sizeMismatch)
        }
        let record = try #require(try await d.record(id: "x"))
        await d.shutdown()
        #expect(record.state == .failed && record.lastErrorCode == CourierError.Code.sizeMismatch.rawValue)
        #expect(record.expectedBytes == 3 << 20 && record.bytesReceived == 0)
        #expect(fx.origin.requests.count == 1)   // failed for good: not retried
        #expect(!fx.exists("f.bin.partial"))
        #expect(fx.finalData("f.bin") == earlier)
    }

    @Test func aReplyOfUnannouncedLengthCutShortIsResumedToTheExpectedSize() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 3 << 20)
        var fault = Fault(); fault.noContentLength = true; fault.dropAfterBytes = 1 << 20; fault.times = 1
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: Int64(data.count)))
        let record = try await d.waitForCompletion(id: "x")
        await d.shutdown()
        #expect(record.state == .completed && record.totalBytes == Int64(data.count))
        #expect(fx.finalData("f.bin") == data)
        let requests = fx.origin.requests
        // Two: the cut reply and its resumption; a loaded suite's idle timeout has added a
        // third (a passing retry), never one that starts from zero again.
        #expect((2...3).contains(requests.count), "\(requests.map(\.range))")
        #expect(requests.first?.range == nil)
        #expect(requests.dropFirst().allSatisfy { $0.range.map { $0 != "bytes=0-" } == true }, "\(requests.map(\.range))")   // resumed from the kept bytes, not from zero
    }

    /// A page of unannounced length, no validators, ending short of the size (a sign-in
    /// page where a film was announced): failed at once, not resumed round after round.
    @Test func aReplyOfUnannouncedLengthShortOfTheSizeWithNoValidatorFailsAtOnce() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("f.bin", size: 300_000)
        var fault = Fault(); fault.noContentLength = true; fault.noValidators = true
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: 5_000_000))
        do {
            _ = try await d.waitForCompletion(id: "x")
            Issue.record("a short body was taken")
        } catch let error as CourierError {
            #expect(error.code == .sizeMismatch)
        }
        let record = try #require(try await d.record(id: "x"))
        await d.shutdown()
        #expect(record.totalBytes == nil && record.expectedBytes == 5_000_000)   // the caller's size is never stored as the server's
        #expect(fx.origin.requests.count == 1)
        #expect(!fx.exists("f.bin.partial") && !fx.exists("f.bin"))
    }

    @Test func aReplyOfUnannouncedLengthLongerThanExpectedFailsAndLeavesNothing() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let data = try fx.serve("f.bin", size: 2 << 20)
        var fault = Fault(); fault.noContentLength = true
        fx.origin.setFault(fault, for: "/f.bin")
        let d = try fx.downloader()
        try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: Int64(data.count) - 1000))
        do {
            _ = try await d.waitForCompletion(id: "x")
            Issue.record("a body past the expected size was taken")
        } catch let error as CourierError {
            #expect(error.code == .sizeMismatch)
        }
        await d.shutdown()
        #expect(!fx.exists("f.bin.partial") && !fx.exists("f.bin"))
    }

    @Test func theExpectedSizeHoldsAfterARelaunch() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        try fx.serve("f.bin", size: 3 << 20)
        var slow = Fault(); slow.bytesPerSecond = 4 << 20; slow.stallAfterBytes = 1 << 20   // the pause lands before the end
        fx.origin.setFault(slow, for: "/f.bin")
        let first = try fx.downloader()
        try await first.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: 3 << 20))
        #expect(try await eventually { fx.partialLength("f.bin") > 0 })
        try await first.pause(id: "x")
        fx.origin.endStalls()
        await first.shutdown()
        // The server now has another file under the name; the next process only resumes.
        try fx.serve("f.bin", size: 5 << 20, seed: 2)
        fx.origin.setFault(Fault(), for: "/f.bin")
        let second = try fx.downloader()
        try await second.resume(id: "x")
        do {
            _ = try await second.waitForCompletion(id: "x")
            Issue.record("a 5 MiB file completed a 3 MiB download")
        } catch let error as CourierError {
            #expect(error.code == .sizeMismatch)
        }
        let record = try #require(try await second.record(id: "x"))
        await second.shutdown()
        #expect(record.expectedBytes == 3 << 20 && record.state == .failed)
        #expect(!fx.exists("f.bin"))
    }

    @Test func aNegativeExpectedSizeIsRefused() async throws {
        let fx = try await Fixture()
        defer { Task { await fx.tearDown() } }
        let d = try fx.downloader()
        do {
            try await d.enqueue(DownloadRequest(id: "x", url: fx.url("f.bin"), destination: "f.bin", expectedSize: -1))
            Issue.record("a negative size was taken")
        } catch let error as CourierError {
            #expect(error.code == .invalidArgument)
        }
        await d.shutdown()
    }
}
