import Foundation
import HTTPTypes
import Testing
@testable import CourierCore

@Suite struct ResumePlanTests {
    @Test func freshDownloadAsksForEverything() {
        let plan = ResumePlan(partialLength: 0, etag: nil, lastModified: nil, totalBytes: nil, resumable: true)
        #expect(plan.offset == 0)
        #expect(plan.requestHeaders.map(\.name) == ["Accept-Encoding"])
        #expect(plan.requestHeaders.first?.value == "identity")
    }

    @Test func resumesWithStrongETag() {
        let plan = ResumePlan(partialLength: 100, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", totalBytes: 1000, resumable: true)
        let headers = Dictionary(uniqueKeysWithValues: plan.requestHeaders.map { ($0.name, $0.value) })
        #expect(headers["Range"] == "bytes=100-")
        #expect(headers["If-Range"] == "\"v1\"")
        #expect(headers["Accept-Encoding"] == "identity")
    }

    @Test func weakETagFallsBackToLastModified() {
        let plan = ResumePlan(partialLength: 100, etag: "W/\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", totalBytes: 1000, resumable: true)
        #expect(plan.requestHeaders.first { $0.name == "If-Range" }?.value == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func weakETagAloneStillResumesOnSizeButNeverSendsIt() {
        let plan = ResumePlan(partialLength: 100, etag: "W/\"v1\"", lastModified: nil, totalBytes: 1000, resumable: true)
        #expect(plan.offset == 100)
        #expect(!plan.requestHeaders.contains { $0.name == "If-Range" })
    }

    @Test func nothingTiesTheBytesSoStartOver() {
        let plan = ResumePlan(partialLength: 100, etag: "W/\"v1\"", lastModified: nil, totalBytes: nil, resumable: true)
        #expect(plan.offset == 0 && plan.discardsPartial)
        let compressed = ResumePlan(partialLength: 100, etag: "\"v1\"", lastModified: nil, totalBytes: nil, resumable: false)
        #expect(compressed.offset == 0 && compressed.discardsPartial)
    }

    // A finished file in place is revalidated, not fetched again blindly.
    @Test(arguments: [
        (ResumePlan.HeldFile(etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"), ["If-None-Match": "\"v1\""]),
        (ResumePlan.HeldFile(etag: "W/\"v1\"", lastModified: nil), ["If-None-Match": "W/\"v1\""]),   // weak comparison is fine here
        (ResumePlan.HeldFile(etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"), ["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"]),
    ])
    func aHeldFileMakesTheRequestConditional(held: ResumePlan.HeldFile, expected: [String: String]) {
        let plan = ResumePlan(partialLength: 0, etag: nil, lastModified: nil, totalBytes: nil, resumable: true, held: held)
        #expect(plan.isConditional)
        let headers = Dictionary(uniqueKeysWithValues: plan.requestHeaders.filter { $0.name.hasPrefix("If-") }.map { ($0.name, $0.value) })
        #expect(headers == expected)
    }

    @Test func keptBytesOfANewVersionWinOverTheCondition() {
        // A revalidation that already began a new version resumes it; it never asks "changed?".
        let plan = ResumePlan(partialLength: 100, etag: "\"v2\"", lastModified: nil, totalBytes: 1000, resumable: true,
                              held: .init(etag: "\"v1\"", lastModified: nil))
        #expect(!plan.isConditional && plan.offset == 100)
        #expect(!plan.requestHeaders.contains { $0.name == "If-None-Match" || $0.name == "If-Modified-Since" })
        let empty = ResumePlan(partialLength: 0, etag: nil, lastModified: nil, totalBytes: nil, resumable: true, held: .init(etag: nil, lastModified: nil))
        #expect(!empty.isConditional)
    }
}

@Suite struct ResponseDispositionTests {
    let resume = ResumePlan(partialLength: 100, etag: "\"v1\"", lastModified: nil, totalBytes: 1000, resumable: true)
    let fresh = ResumePlan(partialLength: 0, etag: nil, lastModified: nil, totalBytes: nil, resumable: true)

    func h(_ pairs: (String, String)...) -> HTTPFields { HTTPFields(pairs) }

    @Test func fullReplyStartsAtZero() {
        let d = ResponseDisposition.decide(plan: fresh, status: 200, headers: h(("Content-Length", "1000"), ("ETag", "\"v1\"")))
        #expect(d == .write(BodyPlan(offset: 0, expectedBodyLength: 1000, totalBytes: 1000, etag: "\"v1\"", lastModified: nil, resumable: true)))
    }

    @Test func notModifiedOnlyAnswersAConditionalRequest() {
        let conditional = ResumePlan(partialLength: 0, etag: nil, lastModified: nil, totalBytes: nil, resumable: true, held: .init(etag: "\"v1\"", lastModified: nil))
        #expect(ResponseDisposition.decide(plan: conditional, status: 304, headers: h(("ETag", "\"v1\""))) == .notModified)
        guard case let .fail(error) = ResponseDisposition.decide(plan: fresh, status: 304, headers: h()) else {
            Issue.record("a 304 nobody asked for must not complete anything"); return
        }
        #expect(error.code == .protocolViolation)
        // A new version answers 200: written from zero like any full reply.
        guard case let .write(body) = ResponseDisposition.decide(plan: conditional, status: 200, headers: h(("Content-Length", "5"), ("ETag", "\"v2\""))) else {
            Issue.record("expected write"); return
        }
        #expect(body.offset == 0 && body.etag == "\"v2\"")
    }

    @Test func twoHundredToARangeTruncates() {
        let d = ResponseDisposition.decide(plan: resume, status: 200, headers: h(("Content-Length", "1000")))
        guard case let .write(plan) = d else { Issue.record("expected write, got \(d)"); return }
        #expect(plan.offset == 0)   // never appended
    }

    @Test func partialReplyAppendsAtItsStart() {
        let d = ResponseDisposition.decide(plan: resume, status: 206, headers: h(("Content-Range", "bytes 100-999/1000"), ("Content-Length", "900"), ("ETag", "\"v1\"")))
        #expect(d == .write(BodyPlan(offset: 100, expectedBodyLength: 900, totalBytes: 1000, etag: "\"v1\"", lastModified: nil, resumable: true)))
    }

    @Test func partialReplyStartingEarlierSeeksBack() {
        let d = ResponseDisposition.decide(plan: resume, status: 206, headers: h(("Content-Range", "bytes 64-999/1000")))
        guard case let .write(plan) = d else { Issue.record("expected write, got \(d)"); return }
        #expect(plan.offset == 64 && plan.expectedBodyLength == 936)
    }

    @Test func partialReplyStartingLaterRestarts() {
        let d = ResponseDisposition.decide(plan: resume, status: 206, headers: h(("Content-Range", "bytes 200-999/1000")))
        guard case .restart = d else { Issue.record("expected restart, got \(d)"); return }
    }

    @Test(arguments: [
        [("Content-Range", "bytes 100-999/2000")],                       // total changed
        [("Content-Range", "bytes 100-999/1000"), ("ETag", "\"v2\"")],  // validator changed
        [("Content-Range", "bytes 100-999/1000"), ("ETag", "W/\"v1\"")], // weak where strong was
        [("Content-Range", "garbage")],
        [] as [(String, String)],                                       // no Content-Range
        [("Content-Range", "bytes 100-999/1000"), ("Content-Length", "5")],
        [("Content-Range", "bytes 100-999/1000"), ("Content-Encoding", "gzip")],
    ])
    func suspicious206Restarts(_ pairs: [(String, String)]) {
        let d = ResponseDisposition.decide(plan: resume, status: 206, headers: HTTPFields(pairs))
        guard case .restart = d else { Issue.record("expected restart, got \(d)"); return }
    }

    @Test func rangeNotSatisfiableCompletesOnlyWhenLengthsAgree() {
        let done = ResumePlan(partialLength: 1000, etag: "\"v1\"", lastModified: nil, totalBytes: 1000, resumable: true)
        #expect(ResponseDisposition.decide(plan: done, status: 416, headers: h(("Content-Range", "bytes */1000"))) == .alreadyComplete(totalBytes: 1000))
        guard case .restart = ResponseDisposition.decide(plan: done, status: 416, headers: h(("Content-Range", "bytes */1500"))) else { Issue.record("expected restart"); return }
        guard case .restart = ResponseDisposition.decide(plan: done, status: 416, headers: h()) else { Issue.record("expected restart"); return }
    }

    @Test func compressedReplyIsWrittenButNotResumable() {
        let d = ResponseDisposition.decide(plan: fresh, status: 200, headers: h(("Content-Encoding", "gzip"), ("Content-Length", "50")))
        #expect(d == .write(BodyPlan(offset: 0, expectedBodyLength: nil, totalBytes: nil, etag: nil, lastModified: nil, resumable: false)))
        // Content-Encoding: identity is no encoding at all.
        guard case let .write(p) = ResponseDisposition.decide(plan: fresh, status: 200, headers: h(("Content-Encoding", "identity"), ("Content-Length", "50"))) else { Issue.record("write"); return }
        #expect(p.resumable && p.expectedBodyLength == 50)
    }

    @Test func statusClasses() {
        let now = Date(timeIntervalSince1970: 0)
        #expect(ResponseDisposition.decide(plan: fresh, status: 302, headers: h(("Location", "/x"))) == .redirect(location: "/x"))
        guard case .fail = ResponseDisposition.decide(plan: fresh, status: 302, headers: h()) else { Issue.record("302 without Location"); return }
        guard case let .retry(e, after) = ResponseDisposition.decide(plan: fresh, status: 503, headers: h(("Retry-After", "7")), now: now) else { Issue.record("503"); return }
        #expect(e.code == .httpServerError && after == 7)
        guard case .retry(_, nil) = ResponseDisposition.decide(plan: fresh, status: 500, headers: h(("Retry-After", "bogus"))) else { Issue.record("500"); return }
        guard case .retry = ResponseDisposition.decide(plan: fresh, status: 429, headers: h()) else { Issue.record("429"); return }
        for status in [401, 403, 410] {
            guard case let .refreshURL(e) = ResponseDisposition.decide(plan: fresh, status: status, headers: h()) else { Issue.record("\(status)"); return }
            #expect(e.code == .accessDenied && e.httpStatus == status)
        }
        guard case let .fail(e404) = ResponseDisposition.decide(plan: fresh, status: 404, headers: h()) else { Issue.record("404"); return }
        #expect(e404.code == .httpClientError && e404.httpStatus == 404)
        guard case .fail = ResponseDisposition.decide(plan: fresh, status: 304, headers: h()) else { Issue.record("304"); return }
        // Issue 28: a Content-Length said twice two ways, or negative, breaks HTTP: the same
        // server sends it again, so it is not retried.
        for lengths in [["12", "13"], ["-5"], ["1e3"]] {
            let d = ResponseDisposition.decide(plan: fresh, status: 200, headers: HTTPFields(lengths.map { HTTPField(name: .contentLength, value: $0) }))
            guard case let .fail(e) = d else { Issue.record("\(lengths): \(d)"); continue }
            #expect(e.code == .protocolViolation && !e.isPassing)
        }
    }

    /// Issue 28: restarting from zero mends a 206 that does not fit the bytes kept; with
    /// nothing kept the same request would get the same reply, so it fails at once.
    @Test(arguments: [
        [("Content-Range", "bytes 100-999/1000")],                       // a range nobody asked for
        [("Content-Range", "garbage")],
        [] as [(String, String)],                                       // no Content-Range
        [("Content-Range", "bytes 0-999/1000"), ("Content-Length", "5")],
        [("Content-Range", "bytes 0-999/1000"), ("Content-Encoding", "gzip")],
    ])
    func broken206FromZeroFailsAtOnce(_ pairs: [(String, String)]) {
        let d = ResponseDisposition.decide(plan: fresh, status: 206, headers: HTTPFields(pairs))
        guard case let .fail(e) = d else { Issue.record("expected fail, got \(d)"); return }
        #expect(e.code == .protocolViolation && e.httpStatus == 206)
    }
}

@Suite struct RetryPolicyTests {
    @Test func backsOffExponentiallyWithJitterAndCap() {
        let p = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(8), maxAttempts: 5)
        #expect(p.delay(afterFailures: 1, retryAfter: nil, random: 0) == .milliseconds(500))
        #expect(p.delay(afterFailures: 1, retryAfter: nil, random: 1) == .seconds(1))
        #expect(p.delay(afterFailures: 3, retryAfter: nil, random: 1) == .seconds(4))
        #expect(p.delay(afterFailures: 10, retryAfter: nil, random: 1) == .seconds(8))
        #expect(p.delay(afterFailures: 1, retryAfter: 30, random: 0) == .seconds(30))
        #expect(p.delay(afterFailures: 1, retryAfter: 100_000, random: 0) == .seconds(300))
    }
}

@Suite struct PathRuleTests {
    @Test func relativePaths() throws {
        #expect(try SafePath.validateRelative("docs//a/./b.pdf") == "docs/a/b.pdf")
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a/\u{0}b", ".", String(repeating: "a", count: 300)] {
            #expect(throws: CourierError.self) { try SafePath.validateRelative(bad) }
        }
        #expect(try SafePath.validateIdentifier("doc_42") == "doc_42")
        for bad in ["", "..", "a/b", "a b", String(repeating: "x", count: 201)] {
            #expect(throws: CourierError.self) { try SafePath.validateIdentifier(bad) }
        }
        #expect(SafePath.sanitizedFileName("..") == "download")
        #expect(SafePath.sanitizedFileName("a\\b\\..\\evil.sh") == "evil.sh")
        #expect(SafePath.sanitizedFileName(".hidden\u{1}") == "hidden")
    }

    @Test func urlRules() throws {
        #expect(throws: CourierError.self) { try URLPolicy.validate("ftp://x/y") }
        #expect(throws: CourierError.self) { try URLPolicy.validate("file:///etc/passwd") }
        #expect(throws: CourierError.self) { try URLPolicy.validate("not a url") }
        #expect(throws: CourierError.self) { try URLPolicy.validate("http:///nohost") }
        let https = try URLPolicy.validate("https://a.example/x")
        #expect(throws: CourierError.self) { try URLPolicy.redirectTarget(location: "http://a.example/y", from: https) }
        #expect(try URLPolicy.redirectTarget(location: "/z", from: https).absoluteString == "https://a.example/z")
        do { _ = try URLPolicy.redirectTarget(location: "http://a.example/y", from: https) } catch let e as CourierError { #expect(e.code == .insecureRedirect) }
    }
}
