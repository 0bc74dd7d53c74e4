import Foundation
import Testing
@testable import CourierCore

@Suite struct ContentRangeTests {
    @Test func parsesSatisfiedRange() throws {
        #expect(try ContentRange(parsing: "bytes 0-499/1234") == .satisfied(first: 0, last: 499, complete: 1234))
        #expect(try ContentRange(parsing: "  bytes 500-1233/1234 ") == .satisfied(first: 500, last: 1233, complete: 1234))
        #expect(try ContentRange(parsing: "bytes 0-0/*") == .satisfied(first: 0, last: 0, complete: nil))
        #expect(try ContentRange(parsing: "BYTES 1-2/3").length == 2)
    }

    @Test func parsesUnsatisfied() throws {
        #expect(try ContentRange(parsing: "bytes */1234") == .unsatisfied(complete: 1234))
        #expect(try ContentRange(parsing: "bytes */0").completeLength == 0)
    }

    @Test(arguments: [
        "", "bytes", "bytes ", "bytes 0-499", "bytes 0-499/", "bytes -1-5/10", "bytes 5-1/10",
        "bytes 0-10/10", "items 0-1/2", "bytes 0-1/2/3", "bytes a-b/c", "bytes */*", "bytes 0 - 1/2",
        "bytes 99999999999999999999-1/2", "bytes 0-1/+5", "bytes=0-1/2", String(repeating: "9", count: 5000),
        "bytes 0-1,3-4/10", "bytes \u{0}-1/2",
    ])
    func rejectsMalformed(_ value: String) {
        #expect(throws: CourierError.self) { try ContentRange(parsing: value) }
        do { _ = try ContentRange(parsing: value) } catch let e as CourierError { #expect(e.code == .malformedHeader) } catch { Issue.record("wrong error") }
    }
}

@Suite struct EntityTagTests {
    @Test func strongAndWeak() throws {
        let strong = try EntityTag(parsing: "\"abc\"")
        #expect(!strong.isWeak && strong.opaque == "abc" && strong.description == "\"abc\"")
        let weak = try EntityTag(parsing: "W/\"abc\"")
        #expect(weak.isWeak && weak.description == "W/\"abc\"")
        #expect(!strong.strongMatches(weak))
        #expect(strong.strongMatches(try EntityTag(parsing: " \"abc\" ")))
        #expect(try EntityTag(parsing: "\"\"").opaque == "")
    }

    @Test func unquotedIsTreatedAsWeak() throws {
        #expect(try EntityTag(parsing: "abc123").isWeak)
    }

    @Test(arguments: ["", "   ", "\"abc", "W/", "\"a\"b\"", "\"a b\"", "W/\"x", "\"\u{7f}\""])
    func rejectsMalformed(_ value: String) {
        #expect(throws: CourierError.self) { try EntityTag(parsing: value) }
    }

    @Test func validatorNeverUsesWeakETag() {
        #expect(Validator.choose(etag: "W/\"x\"", lastModified: nil) == nil)
        #expect(Validator.choose(etag: "W/\"x\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT") == .lastModified("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(Validator.choose(etag: "\"x\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")?.ifRangeValue == "\"x\"")
        #expect(Validator.choose(etag: nil, lastModified: "yesterday") == nil)
    }
}

@Suite struct HTTPDateTests {
    @Test func parsesAllThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test(arguments: ["", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
                      "Sun, 06 Nov 1994 08:49:37 PST", "1994-11-06T08:49:37Z", "Sun, 6 Nov 1994 08:49:37 GMT"])
    func rejectsMalformed(_ value: String) {
        #expect(HTTPDate.parse(value) == nil)
    }
}

@Suite struct RetryAfterTests {
    @Test func secondsAndDates() throws {
        #expect(try RetryAfter.parse("120") == 120)
        #expect(try RetryAfter.parse(" 0 ") == 0)
        let now = Date(timeIntervalSince1970: 784_111_777 - 30)
        #expect(try RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 30)
        // A date in the past means "now", never a negative delay.
        #expect(try RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now.addingTimeInterval(100)) == 0)
    }

    @Test(arguments: ["", "-5", "1.5", "soon", "9999999999999999999999", "12 s"])
    func rejectsMalformed(_ value: String) {
        #expect(throws: CourierError.self) { try RetryAfter.parse(value) }
    }
}

@Suite struct ContentDispositionTests {
    @Test func plainAndExtendedNames() throws {
        #expect(try ContentDisposition(parsing: "attachment; filename=\"report.pdf\"").fileName == "report.pdf")
        #expect(try ContentDisposition(parsing: "attachment; filename=report.pdf").fileName == "report.pdf")
        #expect(try ContentDisposition(parsing: "INLINE").type == "inline")
        let both = try ContentDisposition(parsing: "attachment; filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve%20file.txt")
        #expect(both.fileName == "naïve file.txt")
        #expect(try ContentDisposition(parsing: "attachment; filename=\"a \\\"quoted\\\" name;x.txt\"").fileName == "a \"quoted\" name;x.txt")
        #expect(try ContentDisposition(parsing: "attachment; filename*=iso-8859-1'en'%E9t%E9.txt").fileName == "été.txt")
    }

    @Test func hostileNamesAreReturnedForSanitizing() throws {
        let cd = try ContentDisposition(parsing: "attachment; filename=\"../../etc/passwd\"")
        #expect(cd.fileName == "../../etc/passwd")
        #expect(SafePath.sanitizedFileName(cd.fileName!) == "passwd")
    }

    @Test(arguments: ["", ";", "attachment; filename=\"unterminated", "attachment; filename", "=x", "attach ment; filename=a"])
    func rejectsMalformed(_ value: String) {
        #expect(throws: CourierError.self) { try ContentDisposition(parsing: value) }
    }
}

@Suite struct RedactorTests {
    @Test func redactsSecretsInURLsAndHeaders() {
        let url = "https://user:pw@cdn.example.com/f.bin?api_key=SECRET1&x=1&X-Amz-Signature=SECRET2&token=SECRET3"
        let out = Redactor.redact("failed to fetch \(url)")
        #expect(!out.contains("SECRET"))
        #expect(!out.contains("pw@"))
        #expect(out.contains("x=1"))
        #expect(!Redactor.redact("Authorization: Bearer SECRET4").contains("SECRET4"))
        #expect(!Redactor.redact("sent header authorization: Basic SECRET5\nnext").contains("SECRET5"))
        #expect(Redactor.redact("nothing to hide here") == "nothing to hide here")
        #expect(!CourierError(.network, "GET \(url) failed").description.contains("SECRET"))
    }
}

/// Issue 28: a header value with a line break would smuggle a header (or a request) into
/// the request; it is refused, never sent altered. "\r\n" is one Character in Swift, so the
/// rule reads scalars.
@Suite struct HeaderLineTests {
    @Test(arguments: ["a\r\nX-Injected: 1", "a\nHost: evil", "a\rb", "a\0b", "\r\n"])
    func aValueWithALineBreakIsRefused(_ value: String) {
        #expect(throws: CourierError.self) { try HTTPFields(validating: [("X-Token", value)]) }
        do { _ = try HTTPFields.headerLine("X-Token: \(value)"); Issue.record("accepted \(value.debugDescription)") } catch let e as CourierError {
            #expect(e.code == .invalidArgument)
        } catch { Issue.record("\(error)") }
    }

    @Test func aLineIsSplitAtItsFirstColonAndTrimmed() throws {
        let pair = try HTTPFields.headerLine("Authorization:  Bearer a:b ")
        #expect(pair.name == "Authorization" && pair.value == "Bearer a:b")
        #expect(throws: CourierError.self) { try HTTPFields.headerLine("no colon") }
        #expect(throws: CourierError.self) { try HTTPFields.headerLine("bad name: x") }
    }
}
