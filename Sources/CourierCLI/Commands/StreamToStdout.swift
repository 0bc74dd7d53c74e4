import ArgumentParser
import Courier
import Crypto
import Foundation

/// `courier get URL -o -`: the body straight to standard output, as `curl URL` does. Nothing
/// is recorded and nothing resumes (there is no file to resume into); redirects, the
/// same-origin rule for headers and the SHA-256 check still apply, and a failure has a code.
struct StreamToStdout {
    let url: String
    let headers: [(name: String, value: String)]
    let sha256: String?
    let transport: any HTTPTransport

    func run() async -> Int32 {
        defer { Task { try? await transport.shutdown() } }   // the stream is over: nothing waits for its client
        do {
            let expected = try sha256.map(SHA256Hex.validate)
            let origin = try URLPolicy.validate(url)
            var current = origin
            for _ in 0...5 {
                let sent = current.origin == origin.origin ? headers : []
                let response = try await transport.send(try TransportRequest(url: current.absoluteString, headers: [("Accept-Encoding", "identity")] + sent))
                switch response.status {
                case 200:
                    var hasher = SHA256()
                    for try await buffer in response.body {
                        let data = buffer.withUnsafeBytes { Data($0) }
                        hasher.update(data: data)
                        Terminal.raw(data)   // a reader that went away (`| head`) ends the process quietly, 141
                    }
                    if let expected {
                        let actual = SHA256Hex.hex(hasher.finalize())
                        guard actual == expected else { throw CourierError(.checksumMismatch, "SHA-256 mismatch: expected \(expected), got \(actual)") }
                    }
                    return ExitCodes.success
                case 301, 302, 303, 307, 308:
                    await response.body.drain()
                    guard let location = response.headerFields.first(name: "Location") else { throw CourierError(.protocolViolation, "a redirect without a Location") }
                    current = try URLPolicy.redirectTarget(location: location, from: current)
                default:
                    await response.body.drain()
                    let code: CourierError.Code = response.status >= 500 ? .httpServerError : response.status >= 400 ? .httpClientError : .protocolViolation
                    throw CourierError(code, "the server answered \(response.status)", httpStatus: response.status)
                }
            }
            throw CourierError(.tooManyRedirects, "more than 5 redirects")
        } catch let error as CourierError {
            Terminal.error("courier: \(error.code.rawValue): \(error.message)")
            return ExitCodes.code(for: error.code)
        } catch {
            Terminal.error("courier: E_NETWORK: \(Redactor.redact(FileErrors.describe(error)))")
            return ExitCodes.network
        }
    }
}
