import Courier
import Foundation

/// Where items, media and images come from.
public protocol MediaServer: Sendable {
    /// The item's metadata.
    func item(id: String) async throws -> MediaItem
    /// The media download URL (no secrets in it: see ``authorizationHeaders()``).
    func downloadURL(item: MediaItem, mediaSourceId: String?, container: String, isStatic: Bool) throws -> String
    /// An image URL: primary 300 px wide, backdrop 600 px.
    func imageURL(itemId: String, kind: MediaLayout.ImageKind) throws -> String
    /// Headers that carry the access token at request time; never stored.
    func authorizationHeaders() -> [(name: String, value: String)]
    /// The URL of a transcoded download of a version (the seed's `Static=false` URL with
    /// the container, codecs and bitrate). The default: ``downloadURL(item:mediaSourceId:container:isStatic:)``
    /// with `isStatic` false.
    func transcodeURL(item: MediaItem, mediaSourceId: String?, options: TranscodeOptions) throws -> String
    /// The URL of subtitle stream `index` of a version, as a file of `format` (`srt`, `vtt`).
    /// The default: none (`E_INVALID_ARGUMENT`).
    func subtitleURL(item: MediaItem, mediaSourceId: String, index: Int, format: String) throws -> String
    /// Releases what the server connection holds (its HTTP client), awaited; the default
    /// does nothing.
    func shutdown() async throws
}

extension MediaServer {
    /// Nothing to release.
    public func shutdown() async throws {}

    public func transcodeURL(item: MediaItem, mediaSourceId: String?, options: TranscodeOptions) throws -> String {
        try downloadURL(item: item, mediaSourceId: mediaSourceId, container: options.container, isStatic: false)
    }

    public func subtitleURL(item: MediaItem, mediaSourceId: String, index: Int, format: String) throws -> String {
        throw CourierError(.invalidArgument, "this media server offers no subtitle files")
    }
}

/// A Jellyfin server (seed 003's URLs). The token goes in `X-Emby-Token` at request time,
/// so it never reaches the database, logs or metadata files.
public final class JellyfinServer: MediaServer {
    /// The server's base URL, without a trailing slash.
    public let baseURL: String
    private let token: String?
    private let service: ServiceTransport

    /// Connects to `baseURL` with an access token.
    /// - Parameters:
    ///   - baseURL: the server's http or https URL.
    ///   - token: the access token (`X-Emby-Token`), never stored.
    ///   - transport: the app's HTTP stack (its `Downloader`'s `transport`); `nil`: the
    ///     platform's default, shut down by ``shutdown()``.
    public init(baseURL: String, token: String?, transport: (any HTTPTransport)? = nil) throws {
        _ = try URLPolicy.validate(baseURL)
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.service = ServiceTransport(transport)
    }

    /// Releases the transport when the adapter made it, awaited; call it before dropping
    /// the adapter.
    public func shutdown() async throws {
        try await service.shutdown()
    }

    public func authorizationHeaders() -> [(name: String, value: String)] { token.map { [("X-Emby-Token", $0)] } ?? [] }

    public func item(id: String) async throws -> MediaItem {
        let url = "\(baseURL)/Items/\(try MediaLayout.component(id).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? id)"
        let request = try TransportRequest(url: url, headers: authorizationHeaders() + [("Accept-Encoding", "identity")], timeout: .seconds(30))
        let response = try await service.transport.send(request, followingRedirects: 5)
        let body = try await response.body.collect(upTo: 8 << 20)
        guard response.status == 200 else {
            throw CourierError(response.status == 404 ? .notFound : .httpClientError, "the server answered \(response.status) for item \(id)", httpStatus: response.status)
        }
        do { return try JSONDecoder().decode(MediaItem.self, from: body) } catch {
            throw CourierError(.protocolViolation, "item \(id) is not a BaseItemDto", underlying: error)
        }
    }

    public func downloadURL(item: MediaItem, mediaSourceId: String?, container: String, isStatic: Bool) throws -> String {
        let target = try MediaLayout.component(mediaSourceId ?? item.id)
        var c = URLComponents(string: "\(baseURL)/Items/\(target)/Download")!
        c.queryItems = [URLQueryItem(name: "MediaSourceId", value: mediaSourceId ?? item.id), URLQueryItem(name: "Container", value: container),
                        URLQueryItem(name: "Static", value: isStatic ? "true" : "false"),
                        URLQueryItem(name: "AllowVideoStreamCopy", value: "true"), URLQueryItem(name: "AllowAudioStreamCopy", value: "true")]
        return c.string!
    }

    /// Jellyfin's download URL with `Static=false` and what to transcode to: the server
    /// re-encodes (`VideoCodec`, `AudioCodec`, `MaxStreamingBitrate`, `VideoBitrate`).
    public func transcodeURL(item: MediaItem, mediaSourceId: String?, options: TranscodeOptions) throws -> String {
        var c = URLComponents(string: try downloadURL(item: item, mediaSourceId: mediaSourceId, container: try MediaLayout.component(options.container, "container"), isStatic: false))!
        c.queryItems = (c.queryItems ?? []).filter { !$0.name.hasPrefix("Allow") } + [
            URLQueryItem(name: "VideoCodec", value: options.videoCodec), URLQueryItem(name: "AudioCodec", value: options.audioCodec),
            URLQueryItem(name: "MaxStreamingBitrate", value: String(options.maxBitrate)), URLQueryItem(name: "VideoBitrate", value: String(options.maxBitrate)),
            URLQueryItem(name: "AllowVideoStreamCopy", value: "false"), URLQueryItem(name: "AllowAudioStreamCopy", value: "false")]
        return c.string!
    }

    /// Jellyfin's subtitle route: `/Videos/{itemId}/{mediaSourceId}/Subtitles/{index}/Stream.{format}`.
    public func subtitleURL(item: MediaItem, mediaSourceId: String, index: Int, format: String) throws -> String {
        "\(baseURL)/Videos/\(try MediaLayout.component(item.id))/\(try MediaLayout.component(mediaSourceId))/Subtitles/\(index)/Stream.\(try MediaLayout.component(format, "extension"))"
    }

    public func imageURL(itemId: String, kind: MediaLayout.ImageKind) throws -> String {
        "\(baseURL)/Items/\(try MediaLayout.component(itemId))/Images/\(kind.rawValue)?maxWidth=\(kind == .primary ? 300 : 600)"
    }
}

