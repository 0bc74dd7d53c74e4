import CourierCore
import Foundation
import HTTPTypes

/// Where a background task's file waits to be adopted: `<key>.body` (the system's file,
/// moved out of its temporary place before the delegate returns, as Apple requires) and
/// `<key>.head` (the reply's status and headers, written whole or not at all, last). The
/// head is the commit mark: a body without a head is a move that a kill interrupted, and
/// is never used.
struct HandOffStash: Sendable {
    /// The folder (created on first use).
    let folder: URL

    /// The reply's status line and headers, as stored.
    struct Head: Codable, Equatable {
        var status: Int
        var headers: [[String]]
        /// The task was made from resume data (absent in heads written before it was kept).
        var resumed: Bool?

        var httpHeaders: HTTPFields {
            HTTPFields(headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil })
        }
    }

    /// An arrived reply, ready to adopt.
    struct Arrival {
        let head: Head
        let body: URL
    }

    func bodyURL(_ id: String) -> URL { folder.appendingPathComponent(key(id) + ".body") }
    func headURL(_ id: String) -> URL { folder.appendingPathComponent(key(id) + ".head") }

    /// A file name for any id (ids may hold `/` or be long).
    private func key(_ id: String) -> String { SHA256Hex.shortID("handoff", of: id, bytes: 16) }

    /// Keeps the system's temporary file at `location` with its reply's head. Synchronous:
    /// the system deletes `location` once the delegate returns.
    func keep(_ id: String, location: URL, status: Int, headers: [(String, String)], resumed: Bool = false) throws {
        try Durability.createFolder(folder)
        let body = bodyURL(id)
        discard(id)
        do {
            try FileManager.default.moveItem(at: location, to: body)
        } catch {
            throw CourierError(.writeFailed, "cannot keep the system's file for \(id)", underlying: error)
        }
        // The body is on disk before the head says it is there (a power cut must not leave
        // a head beside a body of zeros).
        do {
            let handle = try FileHandle(forReadingFrom: body)
            defer { try? handle.close() }   // read-only: nothing to lose on close
            try Durability.sync(handle)
        } catch {
            throw CourierError(.writeFailed, "cannot sync the system's file for \(id)", underlying: error)
        }
        let head = Head(status: status, headers: headers.map { [$0.0, $0.1] }, resumed: resumed ? true : nil)
        do {
            try AtomicWrite.write(try JSONEncoder().encode(head), to: headURL(id))
        } catch {
            throw CourierError(.writeFailed, "cannot record the reply for \(id)", underlying: error)
        }
    }

    /// The arrived reply for `id`, when both halves are there.
    func arrival(_ id: String) -> Arrival? {
        let body = bodyURL(id)
        guard FileManager.default.fileExists(atPath: body.path),
              let data = FileManager.default.contents(atPath: headURL(id).path),
              let head = try? JSONDecoder().decode(Head.self, from: data)   // an unreadable head is no commit mark: the body is not used
        else { return nil }
        return Arrival(head: head, body: body)
    }

    /// Whether anything (even half of a pair) is kept for `id`.
    func holdsAnything(_ id: String) -> Bool {
        FileManager.default.fileExists(atPath: bodyURL(id).path) || FileManager.default.fileExists(atPath: headURL(id).path)
    }

    /// Deletes what is kept for `id`: the head first, so a kill in between leaves a body
    /// without a head, which is never used.
    func discard(_ id: String) {
        unlink(headURL(id).path)
        unlink(bodyURL(id).path)
    }

    /// Deletes every kept file whose download is not in `ids` (its hand-off ended before a
    /// kill let the files be deleted).
    func discardAll(except ids: [String]) {
        let keep = Set(ids.flatMap { [bodyURL($0).lastPathComponent, headURL($0).lastPathComponent] })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []   // no folder: nothing to tidy
        for name in names where !keep.contains(name) && (name.hasSuffix(".body") || name.hasSuffix(".head")) {
            unlink(folder.appendingPathComponent(name).path)
        }
    }
}
