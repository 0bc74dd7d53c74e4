import Foundation

/// The URL refresher and request authorizer of one family of downloads (ids with a
/// prefix), so one downloader serves every feature of an app: the attachment queue answers
/// for `attachment:` ids, the media library for `media:`, the documents mirror for `doc:`.
struct CredentialRoute: Sendable {
    let prefix: String
    let refresher: (any URLRefreshing)?
    let authorizer: (any RequestAuthorizing)?
}

/// The routes a downloader knows, longest prefix first.
final class CredentialRoutes: Sendable {
    private let routes = Locked<[CredentialRoute]>([])

    /// Adds (or replaces) the route of `route.prefix`.
    func set(_ route: CredentialRoute) {
        routes.withLock { all in
            all.removeAll { $0.prefix == route.prefix }
            all.append(route)
            all.sort { $0.prefix.count > $1.prefix.count }
        }
    }

    /// The route whose prefix starts `id`, if any.
    func route(for id: String) -> CredentialRoute? {
        routes.withLock { all in all.first { id.hasPrefix($0.prefix) } }
    }
}

extension Downloader {
    /// Has downloads whose id starts with `prefix` ask `urlRefresher` for fresh URLs and
    /// `requestAuthorizer` for headers, instead of the downloader's own: how a feature that
    /// shares the app's downloader (``Downloader`` passed to an attachment queue, a media
    /// library or a documents mirror) brings its storage's credentials. The longest
    /// matching prefix wins; setting a prefix again replaces its route.
    public nonisolated func routeCredentials(forIDsWithPrefix prefix: String, urlRefresher: (any URLRefreshing)?,
                                             requestAuthorizer: (any RequestAuthorizing)?) {
        context.routes.set(CredentialRoute(prefix: prefix, refresher: urlRefresher, authorizer: requestAuthorizer))
    }

    /// Where `directory` is under the root directory, as a relative path ending in `/` (or
    /// `""` for the root itself): a feature sharing this downloader keeps its files there.
    /// Outside the root: `E_INVALID_ARGUMENT`.
    package nonisolated func relativePrefix(of directory: URL) throws -> String {
        let root = context.configuration.rootDirectory.standardizedFileURL.resolvingSymlinksInPath().path
        let path = directory.standardizedFileURL.resolvingSymlinksInPath().path
        if path == root { return "" }
        let base = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(base) else {
            throw CourierError(.invalidArgument, "\(directory.path) is not inside the downloader's root directory \(root): a feature sharing the downloader keeps its files under it")
        }
        return String(path.dropFirst(base.count)) + "/"
    }
}
