import Foundation

/// The client's side of the IETF draft "Resumable Uploads for HTTP"
/// (draft-ietf-httpbis-resumable-upload, the successor of tus), by the interop version a
/// request carries in `Upload-Draft-Interop-Version`: 3 (iOS 17 and macOS 14's URLSession),
/// 5 (iOS 18.0) and 6 (iOS 18.1 on; SwiftNIO's `NIOResumableUpload` speaks all three).
/// Pure: the fields of each request, and what a reply says (issue 48).
///
/// The client creates an upload with no body and marked incomplete, so the creation's
/// final reply (201) names the upload's URL: the `104 Upload Resumption Supported` that
/// names it sooner is dropped by AsyncHTTPClient and libcurl. Each append then says its
/// offset and whether it is the last; after a cut, an offset request (`HEAD`) says what the
/// server holds.
package enum ResumableUploadDraft {
    package enum Version: Int, Sendable, CaseIterable, Comparable {
        case v3 = 3, v5 = 5, v6 = 6

        package static func < (a: Version, b: Version) -> Bool { a.rawValue < b.rawValue }
    }

    static let versionField = "Upload-Draft-Interop-Version"

    /// `POST` to the target: an upload with no body yet, marked incomplete.
    package static func creationHeaders(_ version: Version) -> [(name: String, value: String)] {
        [(versionField, "\(version.rawValue)"), completion(version, false)]
    }

    /// `PATCH` to the upload's URL: the bytes from `offset`, and whether they end the upload.
    package static func appendHeaders(_ version: Version, offset: Int64, complete: Bool) -> [(name: String, value: String)] {
        var headers = [(name: versionField, value: "\(version.rawValue)"), (name: "Upload-Offset", value: "\(offset)"), completion(version, complete)]
        if version >= .v6 { headers.append(("Content-Type", "application/partial-upload")) }
        return headers
    }

    /// `HEAD` to the upload's URL: how much the server holds.
    package static func offsetHeaders(_ version: Version) -> [(name: String, value: String)] { [(versionField, "\(version.rawValue)")] }

    /// `DELETE` to the upload's URL: the server may forget it.
    package static func cancelHeaders(_ version: Version) -> [(name: String, value: String)] { [(versionField, "\(version.rawValue)")] }

    /// Interop 5 on says `Upload-Complete`; 3 said the opposite, `Upload-Incomplete`.
    private static func completion(_ version: Version, _ complete: Bool) -> (name: String, value: String) {
        version >= .v5 ? ("Upload-Complete", complete ? "?1" : "?0") : ("Upload-Incomplete", complete ? "?0" : "?1")
    }

    /// What a reply says, read leniently as to names' case and a value's parameters, and
    /// strictly as to values: a field whose value the draft does not allow is absent.
    package struct Reply: Sendable, Equatable {
        package let status: Int
        package let version: Int?
        package let location: String?
        package let offset: Int64?
        /// From `Upload-Complete`, or else the opposite of `Upload-Incomplete` (interop 3's
        /// name, and what SwiftNIO's server 1.35 sends on a finished 5 or 6 upload).
        package let complete: Bool?

        package init(status: Int, headers: [(String, String)]) {
            func raw(_ name: String) -> String? {
                headers.first { $0.0.lowercased() == name.lowercased() }.map { $0.1.trimmingCharacters(in: .whitespaces) }
            }
            // A structured field's item, without its parameters (`;…`); a URL is read whole.
            func value(_ name: String) -> String? {
                raw(name).map { String($0.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") }
            }
            self.status = status
            version = value(ResumableUploadDraft.versionField).flatMap(Self.integer).flatMap { Int(exactly: $0) }
            location = raw("Location").flatMap { $0.isEmpty ? nil : $0 }
            offset = value("Upload-Offset").flatMap(Self.integer)
            complete = value("Upload-Complete").flatMap(Self.boolean) ?? value("Upload-Incomplete").flatMap(Self.boolean).map { !$0 }
        }

        /// The server answered as one that speaks the draft (a version field).
        package var speaksTheDraft: Bool { version != nil }

        /// An RFC 8941 integer, non-negative: at most 15 digits.
        static func integer(_ text: String) -> Int64? {
            guard (1...15).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int64(text)
        }

        /// An RFC 8941 boolean: `?1` or `?0`.
        static func boolean(_ text: String) -> Bool? { text == "?1" ? true : text == "?0" ? false : nil }
    }

    /// The upload's URL from a creation's reply, resolved against the target; `nil` without
    /// one, or when it is not http(s).
    package static func uploadURL(_ reply: Reply, target: URL) -> URL? {
        guard let location = reply.location, let url = URL(string: location, relativeTo: target)?.absoluteURL,
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else { return nil }
        return url
    }

    /// The offset a reply confirms, when it lies within the file of `size` bytes.
    package static func confirmed(_ reply: Reply, size: Int64) -> Int64? {
        reply.offset.flatMap { $0 <= size ? $0 : nil }
    }
}
