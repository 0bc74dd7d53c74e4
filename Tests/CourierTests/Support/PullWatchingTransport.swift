import CourierCore
import Foundation

/// A transport around another that tells a test when the engine, holding `bytes` of a reply's
/// body, asks the transport for more (``waitForPull(after:within:)``): every byte before then
/// has been handed to the engine and taken in (it asks for the next chunk only after the
/// last one is written and noted). A test of what the engine does with the bytes of a
/// stalled reply waits for that, not for the network in wall time (issue 46: over nginx the
/// last bytes came later than a test's ticks of the engine's clock, and its idle window
/// aborted the attempt first).
final class PullWatchingTransport: HTTPTransport, @unchecked Sendable {   // `state` under its lock
    let base: any HTTPTransport
    private struct Wait { let bytes: Int64; let continuation: CheckedContinuation<Bool, Never> }
    private let state = Locked((pulls: [Int64](), waits: [UUID: Wait]()))

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await base.send(request)
        response.body = TransportBody(Counted(body: response.body, owner: self))
        return response
    }

    func shutdown() async throws { try await base.shutdown() }

    /// `true` once a body that had delivered at least `bytes` is asked for more; `false`
    /// after `limit` (a failed wait).
    func waitForPull(after bytes: Int64, within limit: Duration = .seconds(60)) async -> Bool {
        let key = UUID()
        return await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.pulls.contains(where: { $0 >= bytes }) { return true }
                s.waits[key] = Wait(bytes: bytes, continuation: continuation)
                return false
            }
            if now { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { [state] in
                state.withLock { $0.waits.removeValue(forKey: key) }?.continuation.resume(returning: false)
            }
        }
    }

    /// A body asks for its next chunk, having delivered `delivered` bytes.
    fileprivate func pulled(after delivered: Int64) {
        let woken = state.withLock { s -> [Wait] in
            s.pulls.append(delivered)
            let due = s.waits.filter { $0.value.bytes <= delivered }
            for key in due.keys { s.waits[key] = nil }
            return Array(due.values)
        }
        for wait in woken { wait.continuation.resume(returning: true) }
    }

    private struct Counted: AsyncSequence, Sendable {
        typealias Element = BodyChunk
        let body: TransportBody
        let owner: PullWatchingTransport

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: TransportBody.AsyncIterator
            let owner: PullWatchingTransport
            var delivered: Int64 = 0
            mutating func next() async throws -> BodyChunk? {
                owner.pulled(after: delivered)
                let chunk = try await base.next()
                delivered += Int64(chunk?.count ?? 0)
                return chunk
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator(), owner: owner) }
    }
}
