import Testing
@testable import CourierCore

/// `BodyPlan.holding(to:)`: a size the caller knows, held against a reply.
@Suite struct ExpectedSizeRuleTests {
    private func plan(offset: Int64 = 0, total: Int64?) -> BodyPlan {
        BodyPlan(offset: offset, expectedBodyLength: total.map { $0 - offset }, totalBytes: total, etag: "\"v\"", lastModified: nil, resumable: true)
    }

    @Test func noExpectationLeavesThePlanAsItIs() throws {
        #expect(try plan(total: nil).holding(to: nil) == plan(total: nil))
        #expect(try plan(total: 10).holding(to: nil) == plan(total: 10))
    }

    @Test func theAnnouncedSizeMustBeTheExpectedOne() throws {
        #expect(try plan(total: 1000).holding(to: 1000) == plan(total: 1000))
        #expect(try plan(offset: 400, total: 1000).holding(to: 1000) == plan(offset: 400, total: 1000))
        for (offset, total, expected) in [(0, 999, 1000), (0, 1001, 1000), (400, 2000, 1000), (0, 0, 1)] as [(Int64, Int64, Int64)] {
            #expect(throws: CourierError.self) { try plan(offset: offset, total: total).holding(to: expected) }
            do { _ = try plan(offset: offset, total: total).holding(to: expected) } catch { #expect(error.code == .sizeMismatch) }
        }
    }

    @Test func anUnannouncedLengthIsNotTakenForTheExpectedSize() throws {
        var chunked = plan(total: nil)
        chunked.expectedBodyLength = nil
        #expect(try chunked.holding(to: 5000) == chunked)   // judged when the body ends, never stored as the server's total
        var late = chunked
        late.offset = 6000
        do { _ = try late.holding(to: 5000); Issue.record("a reply past the expected size was taken") } catch { #expect(error.code == .sizeMismatch) }
    }
}
