import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes

/// Uploads handed to the system: each S3 part or tus chunk an upload task from a file
/// (what a background session takes), recorded in the store before it is made
/// (`UploadHandOffPiece`, written by the storage's `UploadHandingOff`). A task's reply is
/// read by `UploadPieceReply` (the engine's own rule) and the piece recorded as the server
/// confirmed it, in the transaction that ends its hand-off; a task that ends without a
/// confirmation leaves the piece to the upload's next run, which asks the server what it
/// holds first (S3 `ListParts`, tus `HEAD`), so a piece that arrived unrecorded is not
/// sent twice.
extension BackgroundTransfers {
    /// Makes an upload task for each request; returns how many were made.
    @discardableResult
    public func handOffUploads(_ requests: [UploadTaskRequest]) async -> Int {
        state.withLock { $0.inBackground = true }
        var made = 0
        for request in requests {
            guard let url = URL(string: request.url) else {
                await endUploadPiece(request.piece, status: nil, headers: [:], "the URL cannot be handed to URLSession")
                continue
            }
            // The same rule as downloads: credentials go to the system only when allowed
            // (Apple reserves `Authorization`; a background session follows redirects itself).
            if !handsOffCredentials, request.carriesCredentials {
                await endUploadPiece(request.piece, status: nil, headers: [:], "its credentials stay with the engine (handsOffCredentials)")
                continue
            }
            var urlRequest = URLRequest(url: url)
            urlRequest.httpMethod = request.method
            urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
            for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
            guard let task = makeTask({ $0.uploadTask(with: urlRequest, fromFile: URL(fileURLWithPath: request.piece.bodyPath)) }) else {
                await endUploadPiece(request.piece, status: nil, headers: [:], "the background session was invalidated")
                continue
            }
            task.taskDescription = request.piece.taskID
            state.withLock { $0.uploadTasks[request.piece.taskID] = task }
            task.resume()
            made += 1
        }
        logger.info("handed off \(made) upload piece(s)")
        return made
    }

    /// Makes `uploader`'s uploads go to the system with ``handOffUploads()`` and tells it when
    /// their pieces ended. Register before ``recover()`` (a relaunch's pieces end there).
    public func register(_ uploader: any BackgroundUploading) {
        uploaders.withLock { $0.append(uploader) }
    }

    /// Hands the registered features' uploads to the system (``register(_:)``): what each
    /// has not sent becomes upload tasks. Returns how many tasks were made.
    @discardableResult
    public func handOffUploads() async -> Int {
        var made = 0
        for uploader in uploaders.withLock({ $0 }) {
            made += await handOffUploads(await uploader.handOffUploads(to: stash.folder.appendingPathComponent("uploads")))
        }
        return made
    }

    /// Upload pieces whose task is running in the system (this process's, or found at launch).
    public var uploadTasksInFlight: Int { state.withLock { $0.uploadTasks.count } }

    /// The system's progress on an upload piece (the delegate's `didSendBodyData`): told to
    /// the registered features per upload, at most about ten times a second.
    public func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                           totalBytesExpectedToSend: Int64) {
        guard let taskID = task.taskDescription, taskID.hasPrefix(UploadHandOffPiece.taskPrefix),
              let hash = taskID.lastIndex(of: "#") else { return }
        let uploadId = String(taskID[taskID.index(taskID.startIndex, offsetBy: UploadHandOffPiece.taskPrefix.count)..<hash])
        let prefix = UploadHandOffPiece.taskPrefix + uploadId + "#"
        let now = ContinuousClock.now
        let inFlight = state.withLock { s -> Int64? in
            guard s.uploadTasks[taskID] === task else { return nil }
            s.uploadSent[taskID] = totalBytesSent
            if let last = s.uploadToldAt[uploadId], now - last < .milliseconds(100), totalBytesSent < totalBytesExpectedToSend { return nil }
            s.uploadToldAt[uploadId] = now
            return s.uploadSent.reduce(Int64(0)) { $1.key.hasPrefix(prefix) && s.uploadTasks[$1.key] != nil ? $0 + $1.value : $0 }
        }
        guard let inFlight else { return }
        let uploaders = self.uploaders.withLock { $0 }
        Task { for uploader in uploaders { await uploader.uploadHandOffProgress(uploadId: uploadId, inFlight: inFlight) } }
    }

    /// An upload piece's task ended (the delegate's `didCompleteWithError`). The stored row
    /// is the authority: a task this process does not know (a relaunch delivers the ends
    /// before ``recover()`` runs) is judged too when it brings a reply, which is checked
    /// against the row's digests and offset; one without a reply speaks only for itself.
    func uploadTaskEnded(_ task: URLSessionTask, taskID: String) {
        let reply = Self.reply(of: task)
        let (judged, acts) = state.withLock { s -> (Bool, Bool) in
            let current = s.uploadTasks[taskID] === task
            if current { s.uploadTasks[taskID] = nil; s.uploadSent[taskID] = nil }
            return (current || (s.uploadTasks[taskID] == nil && reply != nil), s.actsOnEvents)
        }
        guard judged, acts else { return }
        track(taskID) { transfers in
            guard let piece = await transfers.piece(taskID) else { return }
            await transfers.endUploadPiece(piece, status: reply?.status, headers: reply?.headers ?? [:], reply == nil ? "the task ended without a reply" : nil)
        }
    }

    /// A finished task's status and headers, if a reply came.
    static func reply(of task: URLSessionTask) -> (status: Int, headers: HTTPFields)? {
        guard let http = task.response as? HTTPURLResponse else { return nil }
        var pairs: [(String, String)] = []
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { pairs.append((name, value)) }
        }
        return (http.statusCode, HTTPFields(pairs))
    }

    /// The stored piece a task speaks for.
    func piece(_ taskID: String) async -> UploadHandOffPiece? {
        let pieces = try? await downloader.database.uploadHandOffPieces()   // unreadable: the piece stays handed off for the next recover()
        return pieces?.first { $0.taskID == taskID }
    }

    /// Ends `piece`'s hand-off: recorded as confirmed when the reply says the server holds
    /// it, else left to the upload's next run; its copy deleted after the commit.
    func endUploadPiece(_ piece: UploadHandOffPiece, status: Int?, headers: HTTPFields, _ reason: String?) async {
        let database = downloader.database
        do {
            guard let kind = try await database.upload(id: piece.uploadId)?.record.kind else {
                _ = try await database.endUploadHandOff(piece, confirmed: nil)
                if piece.ownsBody { unlink(piece.bodyPath) }
                return
            }
            let outcome = status.map { UploadPieceReply.judge(kind, piece: piece, status: $0, headers: headers) } ?? .notConfirmed(reason ?? "no reply")
            switch outcome {
            case let .confirmed(etag, offset):
                let part = UploadPart(uploadId: piece.uploadId, number: piece.number, offset: piece.offset, size: piece.size, etag: etag,
                                      md5: piece.md5, sha256: piece.sha256)
                _ = try await database.endUploadHandOff(piece, confirmed: part, confirmedBytes: offset)
                logger.info("the server confirmed upload piece \(piece.number)", metadata: ["id": "\(piece.uploadId)"])
            case let .notConfirmed(why):
                _ = try await database.endUploadHandOff(piece, confirmed: nil)
                logger.info("upload piece \(piece.number) goes back to the upload: \(why)", metadata: ["id": "\(piece.uploadId)"])
            }
            if piece.ownsBody { unlink(piece.bodyPath) }
            if try await database.uploadHandOffPieces(uploadId: piece.uploadId).isEmpty {
                for uploader in uploaders.withLock({ $0 }) { await uploader.uploadHandOffEnded(uploadId: piece.uploadId) }
            }
        } catch {
            logger.warning("ending the hand-off of upload piece \(piece.number) failed; recover() ends it: \(error)", metadata: ["id": "\(piece.uploadId)"])
        }
    }

    /// At launch, for a process that runs no downloads (``recover()`` does this too): upload
    /// pieces whose task the system still runs are waited for; the others go back to their
    /// uploads (an upload's next run asks the server what it holds).
    public func recoverUploads() async throws {
        try await recoverUploads(await liveTasks().uploads)
    }

    /// `all`: the session's upload tasks by task description, ended ones too (their reply
    /// is judged here, whether or not the delegate already saw it).
    func recoverUploads(_ all: [String: URLSessionTask]) async throws {
        let me = downloader.leaseOwner
        // Another live process's pieces are its own (a second `courier put` on the store).
        let pieces = try await downloader.database.uploadHandOffPieces().filter { piece in
            guard let owner = piece.owner else { return true }
            return me.sharesProcess(with: owner) || !me.mayBeAlive(owner)
        }
        for piece in pieces {
            if let task = all[piece.taskID], Self.isLive(task) {
                state.withLock { $0.uploadTasks[piece.taskID] = task }
                continue
            }
            let reply = all[piece.taskID].flatMap(Self.reply(of:))
            await track(piece.taskID) { transfers in
                await transfers.endUploadPiece(piece, status: reply?.status, headers: reply?.headers ?? [:], reply == nil ? "the system's task is gone" : nil)
            }.value
        }
        // Copies no row owns (a kill between a copy and its row, or between a commit and its
        // unlink, or rows a deleted upload took with it) are deleted.
        let folder = stash.folder.appendingPathComponent("uploads")
        let owned = Set(try await downloader.database.uploadHandOffPieces().filter(\.ownsBody).map { URL(fileURLWithPath: $0.bodyPath).lastPathComponent })   // every process's
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasSuffix(".part") && !owned.contains(name) {   // no folder: nothing to tidy
            unlink(folder.appendingPathComponent(name).path)
        }
    }

    /// The app is back: upload tasks past the share are left to finish; the others are
    /// cancelled and their pieces go back to their uploads (upload tasks have no resume data).
    func takeBackUploads(share: Double) async {
        let tasks = state.withLock { $0.uploadTasks }
        for (taskID, task) in tasks where Self.isLive(task) {
            if TakeBackRule.leavesToFinish(received: task.countOfBytesSent, expectedToReceive: task.countOfBytesExpectedToSend, share: share) { continue }
            let mine = state.withLock { s -> Bool in
                guard s.uploadTasks[taskID] === task else { return false }
                s.uploadTasks[taskID] = nil
                return true
            }
            guard mine else { continue }
            task.cancel()
            track(taskID) { transfers in
                guard let piece = await transfers.piece(taskID) else { return }
                await transfers.endUploadPiece(piece, status: nil, headers: [:], "taken back")
            }
        }
    }
}
