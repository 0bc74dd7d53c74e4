import AsyncHTTPClient
import Courier
import Foundation
import NIOCore

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
}

/// A Jellyfin server (seed 003's URLs). The token goes in `X-Emby-Token` at request time,
/// so it never reaches the database, logs or metadata files.
public final class JellyfinServer: MediaServer {
    /// The server's base URL, without a trailing slash.
    public let baseURL: String
    private let token: String?
    private let client: HTTPClient

    /// Connects to `baseURL` with an access token.
    public init(baseURL: String, token: String?) throws {
        _ = try URLPolicy.validate(baseURL)
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .follow(max: 5, allowCycles: false)))
    }

    deinit { client.shutdown(queue: .global()) { _ in } }

    public func authorizationHeaders() -> [(name: String, value: String)] { token.map { [("X-Emby-Token", $0)] } ?? [] }

    public func item(id: String) async throws -> MediaItem {
        var request = HTTPClientRequest(url: "\(baseURL)/Items/\(try MediaLayout.component(id).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? id)")
        for (k, v) in authorizationHeaders() { request.headers.add(name: k, value: v) }
        let response: HTTPClientResponse, body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .seconds(30))
            body = try await response.body.collect(upTo: 8 << 20)
        } catch {
            throw AsyncHTTPClientTransport.map(error, url: baseURL)
        }
        guard response.status == .ok else {
            throw CourierError(response.status == .notFound ? .notFound : .httpClientError, "the server answered \(response.status.code) for item \(id)", httpStatus: Int(response.status.code))
        }
        do { return try JSONDecoder().decode(MediaItem.self, from: Data(body.readableBytesView)) } catch {
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

    public func imageURL(itemId: String, kind: MediaLayout.ImageKind) throws -> String {
        "\(baseURL)/Items/\(try MediaLayout.component(itemId))/Images/\(kind.rawValue)?maxWidth=\(kind == .primary ? 300 : 600)"
    }
}

/// Gives the engine the server's auth headers for every request.
struct ServerAuth: RequestAuthorizing {
    let server: any MediaServer
    func headers(for record: DownloadRecord, url: URL) async throws -> [(name: String, value: String)] { server.authorizationHeaders() }
}
