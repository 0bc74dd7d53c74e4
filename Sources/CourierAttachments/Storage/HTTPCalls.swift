import Courier
import Foundation

/// Shared HTTP plumbing for the adapters: every call goes through the app's `HTTPTransport`.
enum HTTPCalls {
    /// Reads a small reply body (error pages, XML) up to 1 MiB.
    static func text(_ response: TransportResponse) async throws -> String {
        String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)
    }

    /// Streams a GET reply body to a file atomically.
    static func save(_ response: TransportResponse, to destination: URL) async throws {
        try Durability.createFolder(destination.deletingLastPathComponent())
        let write = try AtomicWrite(replacing: destination)
        do {
            for try await chunk in response.body {
                do { try chunk.withUnsafeBytes { try write.handle.write(contentsOf: Data($0)) } } catch { throw FileErrors.error(error, "save", destination, .write) }
            }
            try write.commit()
        } catch {
            write.abandon()
            throw error
        }
    }

    static func failure(_ what: String, _ response: TransportResponse, _ body: String) -> CourierError {
        let status = response.status
        // A server's trouble (5xx, 408, 429) passes, as the engine's replies do: retried with
        // backoff. Anything else is the storage's answer and stands.
        let code: CourierError.Code = status == 404 ? .remoteNotFound : status == 408 ? .timeout
            : (status >= 500 || status == 429) ? .httpServerError : .remoteStorage
        let reason = ResponseDisposition.reasonPhrase(status)
        var said = explanation(body)
        if said == ": \(status) \(reason)" || said == ": \(reason)" { said = "" }   // a body that only repeats the status
        return CourierError(code, "\(what) failed: \(status) \(reason)\(said)", httpStatus: status)
    }

    /// What an error reply's body says, in words: an S3-style `<Error>`'s code and message
    /// (`NoSuchBucket: The specified bucket does not exist`), else its text without markup,
    /// shortened with an ellipsis, never cut-off XML.
    static func explanation(_ body: String) -> String {
        func element(_ name: String) -> String? {
            guard let open = body.range(of: "<\(name)>"), let close = body.range(of: "</\(name)>", range: open.upperBound..<body.endIndex) else { return nil }
            let text = body[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : String(text.prefix(300))
        }
        if let code = element("Code") {
            return ": " + code + (element("Message").map { ": " + $0 } ?? "")
        }
        var text = "", inTag = false
        for c in body {
            if c == "<" { inTag = true; text.append(" ") } else if c == ">" { inTag = false } else if !inTag { text.append(c) }
        }
        let words = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        guard !words.isEmpty else { return "" }
        return ": " + (words.count > 300 ? words.prefix(300) + "…" : words)
    }

    /// A file's size, `E_FNF` when it is missing.
    static func size(of url: URL) throws -> Int64 {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: url.path), let size = (attrs[.size] as? NSNumber)?.int64Value else {   // the else branch reports the file as missing
            throw CourierError(.fileNotFound, "\(url.lastPathComponent) does not exist")
        }
        return size
    }
}
