/// Why the engine asks for a fresh URL.
public enum URLRefreshReason: Sendable, Equatable {
    /// A download with kept bytes is about to resume (the stored link may have expired).
    case beforeResume
    /// The server answered 401, 403 or 410.
    case accessDenied(status: Int)
}

/// Supplies fresh URLs for expiring links (presigned, CDN-signed). The engine asks before
/// it resumes a download with kept bytes, and once more when the server answers 401, 403
/// or 410 (once for all the ranges of a segmented download denied together; again only
/// when the fresh link served bytes before it was denied, as a link that expired during a
/// long download is: one denied at once fails the download). The stored validators are
/// kept, so a fresh link to the same file resumes and a link to a changed file restarts.
public protocol URLRefreshing: Sendable {
    /// A fresh URL for the record, or `nil` to keep the current one.
    func refreshedURL(for record: DownloadRecord, reason: URLRefreshReason) async throws -> String?
}
