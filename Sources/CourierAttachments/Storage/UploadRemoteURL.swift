import Courier
import Foundation

/// The one reading of a resumable upload remote's URL, `<kind>+http(s)://host/path?files=…`
/// (tus, the IETF draft): where uploads go, and in `files=` where finished files are served.
enum UploadRemoteURL {
    /// The upload URL (the kind's prefix and `files=` taken off) and the files URL; `form`
    /// names the expected shape in the error.
    static func split(_ url: String, kind: String, form: String) throws -> (uploads: URL, files: String) {
        guard var c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), scheme == "\(kind)+http" || scheme == "\(kind)+https",
              let files = c.queryItems?.first(where: { $0.name == "files" })?.value else {
            throw CourierError(.invalidURL, form)
        }
        c.scheme = String(scheme.dropFirst("\(kind)+".count))
        c.queryItems = c.queryItems?.filter { $0.name != "files" }
        if c.queryItems?.isEmpty == true { c.queryItems = nil }
        guard let uploads = c.url else { throw CourierError(.invalidURL, "not an upload URL: \(url.prefix(200))") }
        return (uploads, files)
    }
}
