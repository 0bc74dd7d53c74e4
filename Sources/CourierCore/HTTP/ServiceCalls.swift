import Foundation
import HTTPTypes

extension HTTPTransport {
    /// Sends a service's call (a storage, a media server's API) and follows up to `limit`
    /// redirects under the engine's rules: never from https to http (`URLPolicy`), the
    /// caller's headers (credentials) only to the first request's origin, a 303 (or a 301
    /// or 302 of a POST) goes on as a GET without a body; a 307 or 308 sends the same body
    /// again (a file body is read again from the file).
    package func send(_ request: TransportRequest, followingRedirects limit: Int) async throws -> TransportResponse {
        guard let first = URL(string: request.url) else { throw CourierError(.invalidURL, "invalid URL \(request.url.prefix(200))") }
        var current = request
        var url = first
        for hop in 0...limit {
            let response = try await send(current)
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headerFields.first(name: "Location") else {
                return response
            }
            await response.body.drain()
            guard hop < limit else { throw CourierError(.tooManyRedirects, "more than \(limit) redirects from \(Redactor.redact(url: request.url))") }
            url = try URLPolicy.redirectTarget(location: location, from: url)
            current.url = url.absoluteString
            if response.status == 303 || (current.method == .post && [301, 302].contains(response.status)) {
                current.method = current.method == .head ? .head : .get
                current.body = nil
                current.headerFields[.contentType] = nil
            }
            if url.origin != first.origin {
                current.headerFields = current.headerFields.filter { Self.sentAcrossOrigins.contains($0.name) }
            }
        }
        throw CourierError(.tooManyRedirects, "more than \(limit) redirects from \(Redactor.redact(url: request.url))")
    }

    /// The headers a redirect to another origin keeps: none that can carry a credential.
    private static var sentAcrossOrigins: Set<HTTPField.Name> {
        [.accept, .acceptEncoding, .contentType, .range, .ifMatch, .ifNoneMatch, .ifRange, .userAgent]
    }
}
