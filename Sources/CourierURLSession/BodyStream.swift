import CourierCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A task's body between the delegate (which appends) and the engine (which reads), with
/// backpressure: past `limit` buffered bytes the task is suspended, and resumed once the
/// reader has taken them.
final class BodyStream: AsyncSequence, @unchecked Sendable { // state is locked
    typealias Element = BodyChunk

    private struct State {
        var chunks: [Data] = []
        var buffered = 0
        var suspended = false
        var finished = false
        var error: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        /// Decoded bytes so far, and the most allowed (a compressed reply).
        var decoded: Int64 = 0
        var decodedLimit: Int64?
    }

    private let state = Locked(State())
    private let task: URLSessionTask
    private let limit: Int
    private let highWater: Locked<Int>

    /// `highWater` records the most bytes ever held (for tests of the backpressure).
    init(task: URLSessionTask, limit: Int, highWater: Locked<Int>) {
        self.task = task
        self.limit = limit
        self.highWater = highWater
    }

    /// A reply the system decodes (Content-Encoding): at most `ratio` times its encoded
    /// length may come out of it (a decompression bomb is cut, like AsyncHTTPClient's limit).
    func limitDecoding(encodedLength: Int64, ratio: Int) {
        let limit = Self.decodedLimit(encodedLength: encodedLength, ratio: ratio)
        state.withLock { $0.decodedLimit = limit }
    }

    /// `ratio` times the encoded length (at least one byte), `Int64.max` past it: the length
    /// is the server's word (a hostile `Content-Length` of 10^17 overflowed the product).
    static func decodedLimit(encodedLength: Int64, ratio: Int) -> Int64 {
        let (limit, overflow) = Swift.max(encodedLength, 1).multipliedReportingOverflow(by: Int64(Swift.max(ratio, 1)))
        return overflow ? .max : limit
    }

    func append(_ data: Data) {
        let over: Bool = state.withLock { s in
            s.decoded += Int64(data.count)
            return s.decodedLimit.map { s.decoded > $0 } ?? false
        }
        if over {
            finish(CourierError(.bodyTooLong, "the server's compressed body decodes past the allowed size"))
            task.cancel()
            return
        }
        let (waiter, held): (CheckedContinuation<Void, Never>?, Int) = state.withLock { s in
            s.chunks.append(data)
            s.buffered += data.count
            // The flag and the call change together, under the lock, so a reader draining
            // at the same moment cannot resume before the suspension (and leave the task
            // suspended, exempt from timeouts, for ever). Neither call calls back at once.
            if s.buffered > limit, !s.suspended, Self.suspendsTasks {
                s.suspended = true
                task.suspend()
            }
            defer { s.waiter = nil }
            return (s.waiter, s.buffered)
        }
        highWater.withLock { $0 = Swift.max($0, held) }
        waiter?.resume()
    }

    /// Apple's URLSession sends no traffic for a suspended task ("produces no network
    /// traffic", developer.apple.com). FoundationNetworking on Linux goes on reading one
    /// (measured: the article "Background transfers and the two HTTP stacks"), and data
    /// arriving for it ends the process (a fatal error in its NativeProtocol): it is never
    /// suspended there.
    static let suspendsTasks: Bool = {
        var suspends = true
        #if canImport(FoundationNetworking)
        suspends = false
        #endif
        return suspends
    }()

    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.finished { return nil }   // the first end stands (a cut, then the cancellation it caused)
            s.finished = true
            s.error = error
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// The next chunk, `nil` at the end; throws the task's error.
    func next() async throws -> BodyChunk? {
        while true {
            try Task.checkCancellation()
            enum Step { case chunk(Data), end(any Error), done, wait }
            let step: Step = state.withLock { s in
                if !s.chunks.isEmpty {
                    let chunk = s.chunks.removeFirst()
                    s.buffered -= chunk.count
                    if s.suspended, s.buffered <= limit / 2 {
                        s.suspended = false
                        task.resume()
                    }
                    return .chunk(chunk)
                }
                if s.finished { return s.error.map { .end($0) } ?? .done }
                return .wait
            }
            switch step {
            case let .chunk(data):
                return BodyChunk(data)
            case let .end(error): throw error
            case .done: return nil
            case .wait:
                // A reader cancelled while waiting cancels the task; the session then ends
                // the stream, which wakes it.
                let task = self.task
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        let ready = state.withLock { s -> Bool in
                            if !s.chunks.isEmpty || s.finished { return true }
                            s.waiter = c
                            return false
                        }
                        if ready { c.resume() }
                    }
                } onCancel: {
                    task.cancel()
                }
            }
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let stream: BodyStream
        mutating func next() async throws -> BodyChunk? { try await stream.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}
