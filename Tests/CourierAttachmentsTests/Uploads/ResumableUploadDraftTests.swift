import Foundation
import Testing
@testable import CourierAttachments

/// Issue 48: the client's side of the IETF draft "Resumable Uploads for HTTP", per interop
/// version: the fields each request carries, and what each reply says (including the
/// replies of servers that get a field's polarity wrong).
struct ResumableUploadDraftTests {
    typealias Draft = ResumableUploadDraft

    func field(_ headers: [(name: String, value: String)], _ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test(arguments: Draft.Version.allCases)
    func aCreationAsksForAnIncompleteUploadWithNoBody(_ version: Draft.Version) {
        let headers = Draft.creationHeaders(version)
        #expect(field(headers, "Upload-Draft-Interop-Version") == "\(version.rawValue)")
        if version >= .v5 {
            #expect(field(headers, "Upload-Complete") == "?0" && field(headers, "Upload-Incomplete") == nil)
        } else {
            #expect(field(headers, "Upload-Incomplete") == "?1" && field(headers, "Upload-Complete") == nil)
        }
        #expect(field(headers, "Upload-Offset") == nil)
    }

    @Test(arguments: Draft.Version.allCases, [false, true])
    func anAppendSaysItsOffsetAndWhetherItEndsTheUpload(_ version: Draft.Version, _ last: Bool) {
        let headers = Draft.appendHeaders(version, offset: 1_048_576, complete: last)
        #expect(field(headers, "Upload-Draft-Interop-Version") == "\(version.rawValue)")
        #expect(field(headers, "Upload-Offset") == "1048576")
        if version >= .v5 {
            #expect(field(headers, "Upload-Complete") == (last ? "?1" : "?0"))
        } else {
            #expect(field(headers, "Upload-Incomplete") == (last ? "?0" : "?1"))
        }
        #expect(field(headers, "Content-Type") == (version >= .v6 ? "application/partial-upload" : nil))
    }

    @Test(arguments: Draft.Version.allCases)
    func anOffsetRequestAndACancelCarryOnlyTheVersion(_ version: Draft.Version) {
        for headers in [Draft.offsetHeaders(version), Draft.cancelHeaders(version)] {
            #expect(headers.count == 1 && field(headers, "Upload-Draft-Interop-Version") == "\(version.rawValue)")
        }
    }

    @Test func aReplyIsReadWhateverTheFieldsCaseAndParameters() {
        let reply = Draft.Reply(status: 201, headers: [("location", "/resumable_upload/abc"), ("UPLOAD-OFFSET", "42"),
                                                       ("Upload-Complete", "?0;x=1"), ("Upload-Draft-Interop-Version", "6")])
        #expect(reply.location == "/resumable_upload/abc" && reply.offset == 42 && reply.complete == false && reply.version == 6)
        #expect(reply.speaksTheDraft)
    }

    /// A URL is read whole: a `;` in it is a path parameter, not a structured field's.
    @Test func aLocationKeepsItsSemicolons() {
        #expect(Draft.Reply(status: 201, headers: [("Location", "/up/abc;jsessionid=7")]).location == "/up/abc;jsessionid=7")
    }

    /// Either field says it: `Upload-Complete: ?1`, or `Upload-Incomplete: ?0` (interop 3's
    /// name, and what SwiftNIO's server 1.35 sends at the end of a 5 or 6 upload).
    @Test func completionIsReadFromEitherField() {
        #expect(Draft.Reply(status: 201, headers: [("Upload-Complete", "?1")]).complete == true)
        #expect(Draft.Reply(status: 201, headers: [("Upload-Incomplete", "?0")]).complete == true)
        #expect(Draft.Reply(status: 201, headers: [("Upload-Incomplete", "?1")]).complete == false)
        #expect(Draft.Reply(status: 201, headers: []).complete == nil)
    }

    /// A value that is not what the draft allows is as if absent: never a negative or
    /// overflowing offset, never a boolean from a word.
    @Test(arguments: ["-1", "1e3", "", " ", "99999999999999999999", "0x10", "12a", "1.5"])
    func aMalformedOffsetIsNoOffset(_ value: String) {
        #expect(Draft.Reply(status: 204, headers: [("Upload-Offset", value)]).offset == nil)
    }

    @Test(arguments: ["1", "true", "?", "?2", "?1?1", ""])
    func aMalformedBooleanIsNoAnswer(_ value: String) {
        #expect(Draft.Reply(status: 201, headers: [("Upload-Complete", value)]).complete == nil)
    }

    @Test func anOffsetOfFifteenDigitsIsRead() {
        #expect(Draft.Reply(status: 204, headers: [("Upload-Offset", "999999999999999")]).offset == 999_999_999_999_999)
        #expect(Draft.Reply(status: 204, headers: [("Upload-Offset", "0")]).offset == 0)
    }

    /// A server without the draft answers a creation as any POST: no version field, no
    /// resumption URL. That is the signal to fall back.
    @Test func aServerWithoutTheDraftIsToldApart() {
        #expect(!Draft.Reply(status: 200, headers: [("Content-Length", "0")]).speaksTheDraft)
        #expect(!Draft.Reply(status: 201, headers: [("Location", "/files/a")]).speaksTheDraft)
        #expect(Draft.Reply(status: 201, headers: [("Location", "/r/a"), ("Upload-Draft-Interop-Version", "3")]).speaksTheDraft)
    }

    /// The resumption URL, resolved against the creation's: relative, absolute, or missing;
    /// never another scheme than http(s).
    @Test func theUploadURLIsResolvedAgainstTheTarget() throws {
        let target = try #require(URL(string: "https://up.example/files/new?x=1"))
        #expect(Draft.uploadURL(Draft.Reply(status: 201, headers: [("Location", "/resumable_upload/7")]), target: target)?.absoluteString
                == "https://up.example/resumable_upload/7")
        #expect(Draft.uploadURL(Draft.Reply(status: 201, headers: [("Location", "https://other.example/u/7")]), target: target)?.absoluteString
                == "https://other.example/u/7")
        #expect(Draft.uploadURL(Draft.Reply(status: 201, headers: []), target: target) == nil)
        #expect(Draft.uploadURL(Draft.Reply(status: 201, headers: [("Location", "file:///etc/passwd")]), target: target) == nil)
    }

    /// The offset a server confirms is only believed within what was sent: past the file, or
    /// behind a previous confirmation, it is a broken reply.
    @Test func aConfirmedOffsetMustLieWithinTheFile() {
        #expect(Draft.confirmed(Draft.Reply(status: 204, headers: [("Upload-Offset", "10")]), size: 100) == 10)
        #expect(Draft.confirmed(Draft.Reply(status: 204, headers: [("Upload-Offset", "100")]), size: 100) == 100)
        #expect(Draft.confirmed(Draft.Reply(status: 204, headers: [("Upload-Offset", "101")]), size: 100) == nil)
        #expect(Draft.confirmed(Draft.Reply(status: 204, headers: []), size: 100) == nil)
    }
}
