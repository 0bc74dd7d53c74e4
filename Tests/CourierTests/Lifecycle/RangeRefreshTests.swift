import Foundation
import Testing
@testable import CourierCore

/// The fresh URLs of a segmented run's ranges (``RangeRefresh``): asked once however many
/// ranges are denied, never in a loop, again when a URL that served ranges expires.
@Suite struct RangeRefreshTests {
    actor Refresher {
        var asked = 0
        func next() -> String {
            asked += 1
            return "https://h/fresh\(asked)"
        }
    }

    let old = URL(string: "https://h/old")!

    @Test func aDenialIsAnsweredOnceForEveryRange() async throws {
        let refresh = RangeRefresh(), refresher = Refresher()
        let ask: @Sendable () async throws -> String? = { await refresher.next() }
        async let a = refresh.answer(afterDenialOf: old, ask)
        async let b = refresh.answer(afterDenialOf: old, ask)
        let (first, second) = try await (a, b)
        #expect(first == URL(string: "https://h/fresh1") && second == first)
        #expect(await refresher.asked == 1)
        #expect(try await refresh.answer(afterDenialOf: old, ask) == first, "a later attempt's denial of the old URL")
        let given = await refresh.given
        #expect(await refresher.asked == 1 && given == 1)
    }

    @Test func aFreshURLDeniedBeforeServingIsNotRefreshedAgain() async throws {
        let refresh = RangeRefresh(), refresher = Refresher()
        let ask: @Sendable () async throws -> String? = { await refresher.next() }
        let fresh = try #require(try await refresh.answer(afterDenialOf: old, ask))
        // The caller compares: the answer is the URL just denied, so it gives up.
        #expect(try await refresh.answer(afterDenialOf: fresh, ask) == fresh)
        #expect(await refresher.asked == 1)
    }

    @Test func aFreshURLThatServedAndExpiredIsRefreshedAgain() async throws {
        let refresh = RangeRefresh(), refresher = Refresher()
        let ask: @Sendable () async throws -> String? = { await refresher.next() }
        let fresh = try #require(try await refresh.answer(afterDenialOf: old, ask))
        await refresh.served(by: fresh)
        let again = try await refresh.answer(afterDenialOf: fresh, ask)
        let (latest, given) = (await refresh.fresh, await refresh.given)
        #expect(again == URL(string: "https://h/fresh2") && latest == again)
        #expect(await refresher.asked == 2 && given == 2)
    }

    @Test func theRunsOwnRefreshIsWhatRangesGoOnWith() async throws {
        let refresh = RangeRefresh(), refresher = Refresher()
        let ask: @Sendable () async throws -> String? = { await refresher.next() }
        let adopted = URL(string: "https://h/from-the-first-request")!
        await refresh.adopt(adopted)
        #expect(try await refresh.answer(afterDenialOf: old, ask) == adopted)
        #expect(await refresher.asked == 0)
    }
}
