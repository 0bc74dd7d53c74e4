import Courier
import Foundation

/// The draft's four requests, each read through ``ResumableUploadDraft/Reply``.
extension DraftUploader {
    typealias Draft = ResumableUploadDraft

    /// What an append's reply says.
    enum AppendOutcome: Equatable {
        /// The server holds the file up to this offset.
        case confirmed(Int64)
        /// 409: the server's offset is another; it said which (and whether it holds the
        /// upload as finished), or `nil` (then ask it).
        case conflict(Int64?, complete: Bool)
        /// A passing trouble (5xx, 408, 429, 423): back off, ask the offset, go on.
        case retry
    }

    /// Sends a request; the caller's headers (auth) go only to the target's own origin, never
    /// to an upload URL a server's `Location` put elsewhere. Redirects are not followed.
    private func send(_ method: HTTPRequest.Method, _ url: URL, _ fields: [(name: String, value: String)], body: TransportRequestBody? = nil,
                      observer: (any RequestBodyObserver)? = nil, timeout: Duration) async throws -> (TransportResponse, Draft.Reply) {
        var request = try TransportRequest(url: url.absoluteString, method: method,
                                           headers: (url.origin == target.origin ? headers : []) + fields + [("Accept-Encoding", "identity")],
                                           body: body, timeout: timeout)
        request.bodyObserver = observer
        let response = try await service.transport.send(request)
        return (response, Draft.Reply(status: response.status, headers: response.headerFields.map { ($0.name.rawName, $0.value) }))
    }

    /// The creation: an upload with no bytes yet, marked incomplete; the 201 names its URL.
    /// A reply without the draft's version field comes from a server that does not speak it
    /// (``NotSpoken``).
    func create() async throws -> URL {
        let (response, reply) = try await send(.post, target, Draft.creationHeaders(version), body: .bytes(Data()), timeout: .seconds(60))
        let text = try await HTTPCalls.text(response)
        guard reply.speaksTheDraft else {
            throw NotSpoken(error: CourierError(.protocolViolation, "\(target.absoluteString.prefix(200)) does not speak the resumable upload draft "
                                                + "(its HTTP \(reply.status) has no Upload-Draft-Interop-Version)", httpStatus: reply.status))
        }
        guard (200..<300).contains(reply.status) else { throw HTTPCalls.failure("creating a resumable upload at \(target.absoluteString)", response, text) }
        guard let url = Draft.uploadURL(reply, target: target) else {
            throw CourierError(.protocolViolation, "the server created an upload but named no http(s) URL for it (Location: \(reply.location?.prefix(200) ?? "none"))")
        }
        return url
    }

    /// The server's offset for the upload and whether it is complete (offset request,
    /// `HEAD`); `nil` when the upload is gone.
    func serverOffset(_ url: URL, size: Int64) async throws -> (offset: Int64, complete: Bool)? {
        let (response, reply) = try await send(.head, url, Draft.offsetHeaders(version), timeout: .seconds(60))
        _ = try await HTTPCalls.text(response)
        if [404, 410].contains(reply.status) { return nil }
        guard (200..<300).contains(reply.status) else { throw HTTPCalls.failure("asking the server for the upload's offset", response, "") }
        guard let said = reply.offset else { throw CourierError(.protocolViolation, "the server's offset reply (\(reply.status)) has no Upload-Offset") }
        guard let offset = Draft.confirmed(reply, size: size) else {
            throw CourierError(.protocolViolation, "the server holds \(said) bytes of a \(size)-byte file")
        }
        return (offset, reply.complete == true)
    }

    /// An append of `chunk` from its offset; `last` marks the upload complete.
    ///
    /// Over cleartext HTTP/1.1 each append closes its connection: SwiftNIO's server answers
    /// a wrong offset `409` before it reads the body, then answers nothing more on that
    /// connection, and a request the pool put on it waited for its timeout (RELIABILITY.md).
    /// Over https the connection may be HTTP/2, where the field is not allowed.
    func append(_ url: URL, _ chunk: UploadChunk, last: Bool, tally: RequestTally) async throws -> AppendOutcome {
        let closing = url.scheme?.lowercased() == "http" ? [(name: "Connection", value: "close")] : []
        let (response, reply) = try await send(.patch, url, Draft.appendHeaders(version, offset: chunk.offset, complete: last) + closing,
                                               body: chunk.body, observer: tally, timeout: .seconds(300))
        let text = try await HTTPCalls.text(response)
        switch reply.status {
        case 200..<300:
            // Every byte of a successful append arrived; an offset the reply names must be
            // within what was sent, never a guess.
            let end = chunk.offset + chunk.length
            let confirmed = reply.offset ?? end
            guard confirmed >= chunk.offset, confirmed <= end else {
                throw CourierError(.protocolViolation, "the server answered Upload-Offset \(confirmed) to \(chunk.length) bytes sent from \(chunk.offset)")
            }
            return .confirmed(confirmed)
        case 409:
            return .conflict(Draft.confirmed(reply, size: Int64.max), complete: reply.complete == true)
        case 404, 410:
            throw UploadRestart.gone
        case 408, 423, 429, 500...599:
            return .retry
        default:
            let status = reply.status
            throw CourierError(status == 403 || status == 401 ? .accessDenied : .remoteStorage,
                               "the server refused an append to \(url.lastPathComponent): HTTP \(status)\(HTTPCalls.explanation(text))", httpStatus: status)
        }
    }

    /// Cancellation (`DELETE`): the server may drop the bytes. A failure is logged only.
    func cancel(_ url: URL) async {
        do {
            let (response, _) = try await send(.delete, url, Draft.cancelHeaders(version), timeout: .seconds(30))
            _ = try await HTTPCalls.text(response)
        } catch {
            logger.info("cancelling \(url.absoluteString): \(error)")
        }
    }
}
