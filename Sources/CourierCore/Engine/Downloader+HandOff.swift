import Foundation
import HTTPTypes

/// What the system is asked for when a download is handed off: the rest of the file,
/// as the engine would ask for it (`Range: bytes=<kept>-` with `If-Range`, identity
/// encoding, the authorizer's headers, which are never stored).
public struct HandOffRequest: Sendable {
    /// The download's id (a background task carries it as its `taskDescription`).
    public let id: String
    /// The URL to ask, with its secrets (known to this process only).
    public let url: String
    /// The headers that ask for the rest: `Range`, `If-Range`, `Accept-Encoding`.
    public let headers: [(name: String, value: String)]
    /// The request authorizer's headers (credentials, never stored), if any.
    public let credentials: [(name: String, value: String)]
    /// The bytes the partial file keeps.
    public let keptBytes: Int64
    /// Where the system's task reports what it wrote (events and the stored progress).
    public let progress: HandOffProgress
}

/// What became of a hand-off's reply.
public enum HandOffResult: Sendable, Equatable {
    /// The body was written at `offset` (appended to the kept bytes, or from 0 for a 200):
    /// the engine finishes the download, or goes on with it if bytes are still missing.
    case spliced(offset: Int64, bytes: Int64)
    /// The server's file changed under the kept bytes: they are discarded and the engine
    /// starts over from zero.
    case restarted(reason: String)
    /// Nothing in the reply can be used (an error status, a short file): the engine goes
    /// on from the kept bytes under its usual rules.
    case returned(reason: String)
    /// The download is no longer handed off (cancelled, or already taken back).
    case stale
}

/// Background hand-off, the engine's side: the download is stopped and recorded as
/// `handedOff` with what it keeps (``HandOffRecord``); a download task of the system's
/// fetches the rest; its file is judged by ``ResponseDisposition`` exactly as a streamed
/// reply would be and spliced into the partial file; the normal run then verifies, syncs
/// and renames it. While a download is handed off no run of the engine touches it, and a
/// hand-off ends once (adopted, or taken back), so the two never both write.
///
/// Every step survives a kill: the splice rewrites from the recorded offset (a half-done
/// splice is simply done again), and the record and the hand-off row change in one
/// transaction, after which the caller deletes the task's file.
extension Downloader {
    /// Hands download `id` off: stops it if it runs here, records what its partial file
    /// keeps, and returns the request that fetches the rest. `nil` when there is nothing to
    /// hand off (it completed, failed, is paused, or runs in another process), or when the
    /// request authorizer adds headers and `allowingCredentials` is false (it then runs on
    /// here, untouched).
    public func handOff(id: String, allowingCredentials: Bool = true) async throws -> HandOffRequest? {
        try checkOpen()
        return try await serialized(id) {
            let record = try await storedRecord(id)
            guard [.queued, .downloading].contains(record.state) else { return nil }
            // Everything that can refuse comes before the download is stopped: a redacted URL
            // with no refresher, an authorizer that fails or whose headers may not go.
            let run = DownloadRun(id: id, context: context, liveURL: liveURLs[id])
            let url = try URLPolicy.validate(try await run.usableURL(record))
            let credentials: [(name: String, value: String)]
            do {
                credentials = try await context.authorizer(for: id)?.headers(for: record, url: url) ?? []
            } catch let error as CourierError {
                throw error
            } catch {
                throw CourierError(.unexpected, "the request authorizer failed for \(id): \(error)", underlying: error)
            }
            if !credentials.isEmpty, !allowingCredentials { return nil }
            // Nothing starts while the hand-off is made: the queue's page, read before it
            // (right after a relaunch's start()), would launch a run whose claim came first,
            // and that run went on over the handed-off record (HandOffSimulationTests).
            holdQueue()
            defer { releaseQueue() }
            if running[id] != nil {
                _ = await stopRunning(id, .handOff)
            } else {
                _ = try await recordHandOff(id)
            }
            adopted[id] = nil   // out of the queue, with the page's entry if it came in meanwhile
            closeHandOffProgress(id)   // one a relaunch made for an earlier hand-off is not this one's
            guard let (_, handOff) = try await context.database.handOff(id: id), let progress = try await handOffProgress(id: id) else { return nil }
            return HandOffRequest(id: id, url: url.absoluteString, headers: handOff.plan.requestHeaders, credentials: credentials,
                                  keptBytes: handOff.keptBytes, progress: progress)
        }
    }

    /// Records the hand-off of `id` (stopped, or never started here), then cuts a
    /// segmented partial file to the bytes it keeps (after the commit, and only as a
    /// courtesy: every end of the hand-off cuts it again before the engine runs it).
    func recordHandOff(_ id: String) async throws -> HandOffRecord? {
        guard let record = try await context.database.record(id: id) else { return nil }
        let partial = context.fileURL(record.partialPath)
        guard let handOff = try await context.database.handOff(id: id, fileLength: PartialFile.length(at: partial), owner: context.owner) else { return nil }
        context.hub.publish(.stateChanged(id: id, state: .handedOff, error: nil))
        await context.bestEffort("cutting the partial to the kept bytes", id: id) { try await Blocking.run { try Self.cut(partial, to: handOff.keptBytes) } }
        return handOff
    }

    /// Adopts what the system fetched for handed-off download `id`: the reply's `status`
    /// and `headers`, and its body in the file at `body` (left for the caller to delete
    /// once this returns; it is never moved into place).
    @discardableResult
    /// `resumedFromData`: the task was made from the system's resume data (its file may hold
    /// everything from the kept bytes while its reply names the last range asked for).
    public func adoptHandOff(id: String, status: Int, headers: HTTPFields, body: URL, resumedFromData: Bool = false) async throws -> HandOffResult {
        try await serialized(id) { try await adoptSerialized(id: id, status: status, headers: headers, body: body, resumedFromData: resumedFromData) }
    }

    private func adoptSerialized(id: String, status: Int, headers: HTTPFields, body: URL, resumedFromData: Bool) async throws -> HandOffResult {
        guard let (record, handOff) = try await context.database.handOff(id: id) else { return .stale }
        let partial = context.fileURL(record.partialPath)
        let bodyLength = PartialFile.length(at: body)
        let headers = resumedFromData ? Self.resumedTaskHeaders(status: status, headers, bodyLength: bodyLength, kept: handOff.keptBytes) ?? headers : headers
        switch ResponseDisposition.decide(plan: handOff.plan, status: status, headers: headers) {
        case var .write(reply):
            if let expected = reply.expectedBodyLength, expected != bodyLength {
                return try await giveBackKept(id, "the system's file has \(bodyLength) bytes, the reply announced \(expected)")
            }
            // A whole reply of unannounced length (chunked): the system's file is all of it.
            if reply.totalBytes == nil, reply.resumable, reply.offset == 0 { reply.totalBytes = bodyLength }
            // Another size than the caller's: the engine's own run fails it (and discards it).
            do { reply = try reply.holding(to: record.expectedBytes) } catch {
                return try await giveBackKept(id, error.description)
            }
            if let max = context.configuration.maxFileSize, max < reply.offset + bodyLength || reply.totalBytes.map({ $0 > max }) == true {
                return try await giveBackKept(id, "the file is over the limit of \(max) bytes")
            }
            guard reply.offset <= handOff.keptBytes, reply.offset <= PartialFile.length(at: partial) else {
                return try await giveBackKept(id, "the reply starts at \(reply.offset), after the kept bytes")
            }
            let offset = reply.offset
            do {
                try await Blocking.run { try Self.splice(body, into: partial, at: offset) }
            } catch {
                // Its failed sync deleted the partial: nothing kept is known to be on the disk
                // (the simulator's disk: seed 22012220).
                if PartialFile.identity(at: partial) == nil {
                    _ = try? await endHandOffFromNothing(id)   // the splice's own error is the one to report
                } else {
                    _ = try? await giveBackKept(id, "the splice failed")   // the splice's own error is the one to report
                }
                throw error
            }
            let length = reply.offset + bodyLength
            let spliced = reply
            guard let updated = try await context.database.endHandOff(id: id, { $0.adoptHandOff(length: length, reply: spliced) }) else { return .stale }
            giveBack(updated, whole: updated.totalBytes == length)
            return .spliced(offset: reply.offset, bytes: bodyLength)
        case .alreadyComplete:
            guard let updated = try await endHandOffKeeping(id, { kept in { $0.requeue(keeping: kept, freshStart: false) } }) else { return .stale }
            giveBack(updated, whole: true)
            return .spliced(offset: handOff.keptBytes, bytes: 0)
        case let .restart(reason):
            guard try await endHandOffFromNothing(id) else { return .stale }
            return .restarted(reason: reason)
        case .notModified, .redirect, .retry, .refreshURL, .fail:
            return try await giveBackKept(id, "the system's reply was \(status)")
        }
    }

    /// The headers of a task resumed from the system's resume data (Apple's URLSession),
    /// as they apply to its file: the file holds everything from the kept bytes, while the
    /// reply (the resumed request's 206) names only the range asked for last. When the
    /// lengths say exactly that (`first` after the kept bytes, the file `last - kept + 1`
    /// long), the reply is read as the range from `kept`, and then judged like any other
    /// (validators, size). `nil`: the reply stands as it came.
    static func resumedTaskHeaders(status: Int, _ headers: HTTPFields, bodyLength: Int64, kept: Int64) -> HTTPFields? {
        guard status == 206, let raw = headers.first(name: "Content-Range"),
              let range = try? ContentRange(parsing: raw), case let .satisfied(first, last, complete) = range,   // unparsable: judged as it came
              first > kept, last - kept + 1 == bodyLength else { return nil }
        var fields = headers
        fields[HTTPField.Name("Content-Range")!] = "bytes \(kept)-\(last)/\(complete.map(String.init) ?? "*")"
        fields[.contentLength] = String(bodyLength)
        return fields
    }

    /// Ends download `id`'s hand-off without using anything the system fetched (the task
    /// failed, was cancelled, or the app takes the download back): the engine goes on from
    /// the kept bytes.
    @discardableResult
    public func takeBack(id: String, _ reason: String = "taken back") async throws -> HandOffResult {
        try await serialized(id) { try await giveBackKept(id, reason) }
    }

    /// Ends `id`'s hand-off keeping nothing: the partial deleted, the record back to zero and
    /// queued. False when it was not handed off. Call it inside ``serialized(_:_:)``.
    private func endHandOffFromNothing(_ id: String) async throws -> Bool {
        guard let (record, _) = try await context.database.handOff(id: id) else { return false }
        let partial = context.fileURL(record.partialPath)
        // Before the commit: a kill after this unlink leaves the hand-off to be ended
        // again, which finds no partial and nothing to splice onto.
        try await Blocking.run { try PartialFile.deleteDurably(partial) }   // for good: a power cut must not bring it back under a record from zero
        guard let updated = try await context.database.endHandOff(id: id, { r in
            r.requeue(keeping: 0, freshStart: false)
            r.resetToZero(countingAttempt: true)
        }) else { return false }
        context.logger.info("hand-off ended: going on from nothing", metadata: ["id": "\(id)"])
        giveBack(updated, whole: false)
        return true
    }

    private func giveBackKept(_ id: String, _ reason: String) async throws -> HandOffResult {
        guard let updated = try await endHandOffKeeping(id, { kept in { $0.requeue(keeping: kept, freshStart: false) } }) else { return .stale }
        context.logger.info("hand-off ended: \(reason); going on from \(updated.bytesReceived) bytes", metadata: ["id": "\(id)"])
        giveBack(updated, whole: false)
        return .returned(reason: reason)
    }

    /// Ends `id`'s hand-off keeping only the bytes it kept: the partial is cut to them first
    /// (it may hold a half-done splice past them), then `change(kept)` is applied to the
    /// record. `nil` when it was not handed off. Call it inside ``serialized(_:_:)``.
    func endHandOffKeeping(_ id: String, _ change: (Int64) -> @Sendable (inout DownloadRecord) -> Void) async throws -> DownloadRecord? {
        guard let (record, handOff) = try await context.database.handOff(id: id) else { return nil }
        closeHandOffProgress(id)
        let partial = context.fileURL(record.partialPath)
        try await Blocking.run { try Self.cut(partial, to: handOff.keptBytes) }
        return try await context.database.endHandOff(id: id, change(handOff.keptBytes))
    }

    /// Runs `body` alone among the hand-off steps of download `id` (hand-off, adoption, take
    /// back, pause, cancel): the actor lets others in while a splice waits on the disk, and
    /// a pause that cut the partial mid-splice would leave a hole of zeros behind.
    func serialized<T>(_ id: String, _ body: () async throws -> T) async throws -> T {
        try await handOffSteps.run(id, body)
    }

    /// The downloads handed off by this process or by one that is no longer running: the
    /// ones for this process to adopt or take back (after a relaunch, all of them). Those of
    /// another live process (a second `courier` on the same store) are left to it.
    public func handedOffIDs() async throws -> [String] {
        try await context.database.handedOff().filter { entry in
            guard let owner = entry.owner else { return true }
            return context.owner.sharesProcess(with: owner) || !context.owner.mayBeAlive(owner)
        }.map(\.id)
    }

    /// A download whose hand-off ended runs here again; `whole`: its partial file holds the
    /// whole file, so the run only verifies and finishes it.
    private func giveBack(_ record: DownloadRecord, whole: Bool) {
        closeHandOffProgress(record.id)
        context.hub.publish(.stateChanged(id: record.id, state: .queued, error: nil))
        guard !isShutDown else { return }
        if whole { wholePartials.insert(record.id) }
        adopt(record)
        pump()
    }

    /// Cuts `url` to `length` when it is longer (a preallocated or half-spliced partial).
    static func cut(_ url: URL, to length: Int64) throws {
        guard PartialFile.length(at: url) > length else { return }
        guard truncate(url.path, off_t(length)) == 0 else { throw FileErrors.error(errno, "cut", url, .write) }
    }

    /// Writes the file at `body` into `partial` from `offset` (cutting it there first), and
    /// syncs it. Done again from the start after a kill: the same bytes land in the same place.
    static func splice(_ body: URL, into partial: URL, at offset: Int64) throws {
        let source = open(body.path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw FileErrors.error(errno, "read", body, .read) }
        defer { close(source) }
        let target = open(partial.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard target >= 0 else { throw FileErrors.error(errno, "open", partial, .write) }
        defer { close(target) }
        guard ftruncate(target, off_t(offset)) == 0 else { throw FileErrors.error(errno, "cut", partial, .write) }
        var position = offset
        // In the kernel where it can (no copy through this process; a clone on file systems
        // that share blocks); through a buffer where it cannot (another file system, Darwin).
        try KernelCopy.copyRest(from: source, to: target, at: &position, source: body, target: partial)
        // All of it, or the splice is not done (a kill or a short copy is redone from the start).
        guard position == offset + PartialFile.length(at: body) else {
            throw CourierError(.writeFailed, "the splice into \(partial.lastPathComponent) stopped at \(position) bytes")
        }
        // Not known to hold what was spliced (nor, for a 200 spliced at 0, what was kept):
        // deleted, and the hand-off ends from nothing.
        try PartialFile.syncOrDiscard(target, partial)
    }
}
