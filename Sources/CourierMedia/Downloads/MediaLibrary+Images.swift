import Courier
import Foundation

/// The images beside a version (seed 003's hierarchy): the movie's own; for an episode the
/// series', the season's and the episode's.
extension MediaLibrary {
    /// One image to fetch: where it goes in the library, and the server's images it may be
    /// taken from, tried in order (the first that answers is kept).
    struct ImageJob: Equatable {
        var path: String
        var sources: [Source]
        struct Source: Equatable {
            var itemId: String
            var kind: MediaLayout.ImageKind
        }
    }

    /// The images a version brings. An episode's backdrop is the episode's primary image
    /// (the seed's rule: servers rarely have episode backdrops, so asking for one was
    /// usually a silent 404). A season's backdrop is the season's own when its item lists
    /// one, else the series' (most servers give seasons a poster only); with the season's
    /// item unknown, the season's is asked first, then the series'.
    static func imageJobs(_ item: MediaItem, season: MediaItem?) -> [ImageJob] {
        func job(_ context: MediaLayout.ImageContext, _ kind: MediaLayout.ImageKind, _ sources: [(String, MediaLayout.ImageKind)]) -> ImageJob? {
            guard let path = try? MediaLayout.image(context, kind, ext: "jpeg") else { return nil }   // an id that is no file name has no image
            return ImageJob(path: path, sources: sources.map { ImageJob.Source(itemId: $0.0, kind: $0.1) })
        }
        switch item.type {
        case .movie:
            return [job(.movie(item), .primary, [(item.id, .primary)]), job(.movie(item), .backdrop, [(item.id, .backdrop)])].compactMap { $0 }
        case .episode:
            guard let seriesId = item.seriesId, let folder = try? MediaLayout.itemFolder(item), let seasonFolder = try? MediaLayout.seasonFolder(item) else { return [] }   // an item with no valid folder has no images to fetch
            let series = MediaLayout.ImageContext.series(id: seriesId, folder: folder)
            var jobs = [job(series, .primary, [(seriesId, .primary)]), job(series, .backdrop, [(seriesId, .backdrop)])]
            if let seasonId = item.seasonId {
                let context = MediaLayout.ImageContext.season(id: seasonId, folder: seasonFolder)
                let backdrop: [(String, MediaLayout.ImageKind)]
                switch season?.backdropImageTags?.isEmpty {
                case false?: backdrop = [(seasonId, .backdrop)]
                case true?: backdrop = [(seriesId, .backdrop)]
                case nil: backdrop = season == nil ? [(seasonId, .backdrop), (seriesId, .backdrop)] : [(seriesId, .backdrop)]
                }
                jobs += [job(context, .primary, [(seasonId, .primary)]), job(context, .backdrop, backdrop)]
            }
            jobs += [job(.episode(item), .primary, [(item.id, .primary)]), job(.episode(item), .backdrop, [(item.id, .primary)])]
            return jobs.compactMap { $0 }
        default:
            return []
        }
    }

    /// Fetches an image from its first source that answers; one already in place is kept.
    func fetchImage(_ image: ImageJob) async throws {
        if FileManager.default.fileExists(atPath: root.appendingPathComponent(image.path).path) { return }
        let id = SHA256Hex.shortID(Self.imagePrefix, of: image.path)
        var lastError: (any Error)?
        for source in image.sources {
            do {
                try await downloader.fetch(DownloadRequest(id: id, url: try server.imageURL(itemId: source.itemId, kind: source.kind), destination: enginePrefix + image.path))
                return
            } catch {
                try? await downloader.cancel(id: id)   // an image is small and fetched again next time: no failed record stays behind
                lastError = error
                // The next source only when this one has no such image: a passing failure
                // (the network) must not keep another item's picture for good.
                let status = (error as? CourierError)?.httpStatus
                guard !Task.isCancelled, status == 404 || status == 410 else { break }
            }
        }
        if let lastError { throw lastError }
    }
}
