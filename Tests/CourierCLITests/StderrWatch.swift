import Foundation

/// A launched command's standard error, read as it comes on a thread of its own: a test
/// waits for a line the command prints (``until(_:)``) instead of for a time, and has the
/// whole text once the command has ended (``CLITests/finish(_:_:_:)``).
final class StderrWatch: @unchecked Sendable {   // every field under `lock`
    private let lock = NSLock()
    private var data = Data(), ended = false
    private var waiting: [(needle: String, continuation: CheckedContinuation<Bool, Never>)] = []

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                add(chunk)
            }
            add(nil)
        }.start()
    }

    /// Adds what was read (`nil`: the end), and wakes the waits it settles.
    private func add(_ chunk: Data?) {
        let settled = lock.withLock { () -> [(CheckedContinuation<Bool, Never>, Bool)] in
            if let chunk { data.append(chunk) } else { ended = true }
            let text = String(decoding: data, as: UTF8.self)
            var settled: [(CheckedContinuation<Bool, Never>, Bool)] = []
            waiting.removeAll { wait in
                let found = text.contains(wait.needle)
                if found || ended { settled.append((wait.continuation, found)) }
                return found || ended
            }
            return settled
        }
        for (continuation, found) in settled { continuation.resume(returning: found) }
    }

    /// `true` once the command has printed `needle`; `false` when it closed its standard
    /// error without.
    func until(_ needle: String) async -> Bool {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool? in
                if String(decoding: data, as: UTF8.self).contains(needle) { return true }
                if ended { return false }
                waiting.append((needle, continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Everything the command printed there, once it has closed its standard error.
    func text() async -> String {
        _ = await until("\u{0}")   // never printed: returns at the end
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}

extension CLITests {
    /// ``finish(_:_:_:)`` for a command whose standard error a ``StderrWatch`` reads.
    static func finish(_ p: Process, _ out: Pipe, _ watch: StderrWatch) async -> Result {
        let stderr = await watch.text()
        let stdout = await withCheckedContinuation { continuation in
            Thread {
                let data = out.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                continuation.resume(returning: data)
            }.start()
        }
        let result = Result(status: p.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: stderr, stdoutData: stdout)
        expectNoBuildPath(result.stderr)
        return result
    }
}
