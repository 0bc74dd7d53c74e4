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
    /// The id prefixes of Courier's own features. A download whose id starts with one never
    /// gets the downloader's own credentials, only its feature's route: an app's token does
    /// not go to a media server, nor a media server's token anywhere else, even before the
    /// feature is made.
    static let reservedPrefixes = ["attachment:", "media:", "media-subtitle:", "media-image:", "doc:"]

    private let routes = Locked<[CredentialRoute]>([])

    /// Adds the route of `route.prefix`; a prefix routed already is refused (two features of
    /// one kind cannot share a downloader: their ids would meet).
    func add(_ route: CredentialRoute) throws {
        try routes.withLock { all in
            guard !all.contains(where: { $0.prefix == route.prefix }) else {
                throw CourierError(.invalidArgument, "downloads with ids \(route.prefix)… already have their credentials from another feature sharing this downloader: give each feature of one kind a downloader of its own")
            }
            all.append(route)
            all.sort { $0.prefix.count > $1.prefix.count }
        }
    }

    /// The route whose prefix starts `id`, if any.
    func route(for id: String) -> CredentialRoute? {
        routes.withLock { all in all.first { id.hasPrefix($0.prefix) } }
    }

    /// Whether `id` belongs to a feature of Courier's (see ``reservedPrefixes``).
    static func isReserved(_ id: String) -> Bool {
        reservedPrefixes.contains { id.hasPrefix($0) }
    }
}

extension Downloader {
    /// Has downloads whose id starts with `prefix` ask `urlRefresher` for fresh URLs and
    /// `requestAuthorizer` for headers, instead of the downloader's own: how a feature that
    /// shares the app's downloader (``Downloader`` passed to an attachment queue, a media
    /// library or a documents mirror) brings its storage's credentials. The longest
    /// matching prefix wins; a prefix routed already is refused (`E_INVALID_ARGUMENT`). Ids
    /// of Courier's features (`attachment:`, `media:`, `media-subtitle:`, `media-image:`,
    /// `doc:`) never get the downloader's own credentials: make the features before
    /// ``start()``, so the downloads they left get theirs.
    public nonisolated func routeCredentials(forIDsWithPrefix prefix: String, urlRefresher: (any URLRefreshing)?,
                                             requestAuthorizer: (any RequestAuthorizing)?) throws {
        try context.routes.add(CredentialRoute(prefix: prefix, refresher: urlRefresher, authorizer: requestAuthorizer))
    }

    /// Where `directory` is under the root directory, as a relative path ending in `/` (or
    /// `""` for the root itself): a feature sharing this downloader keeps its files there.
    /// Outside the root: `E_INVALID_ARGUMENT`.
    package nonisolated func relativePrefix(of directory: URL) throws -> String {
        let root = Self.resolved(context.configuration.rootDirectory)
        let path = Self.resolved(directory)
        if path == root { return "" }
        let base = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(base) else {
            throw CourierError(.invalidArgument, "\(directory.path) is not inside the downloader's root directory \(root): a feature sharing the downloader keeps its files under it")
        }
        return String(path.dropFirst(base.count)) + "/"
    }

    /// The path with its symbolic links resolved, through its nearest existing folder (a
    /// folder not made yet resolves as its parent does: `/var` and `/private/var` alike).
    private nonisolated static func resolved(_ url: URL) -> String {
        var existing = url.standardizedFileURL, rest: [String] = []
        while !FileManager.default.fileExists(atPath: existing.path), existing.pathComponents.count > 1 {
            rest.insert(existing.lastPathComponent, at: 0)
            existing.deleteLastPathComponent()
        }
        return rest.reduce(existing.resolvingSymlinksInPath()) { $0.appendingPathComponent($1) }.path
    }
}
