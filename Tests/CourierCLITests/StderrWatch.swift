import CourierTestSupport
import Foundation

/// A launched command's standard error, read as it comes on a thread of its own: a test
/// waits for a line the command prints (``until(_:)``) instead of for a time, and has the
/// whole text once the command has ended (``CLITests/finish(_:_:_:)``).
final class StderrWatch: @unchecked Sendable {   // every field under `lock`
    private let lock = NSLock()
    private var data = Data(), ended = false
    private var waiting: [UUID: (needle: String?, continuation: CheckedContinuation<Bool, Never>)] = [:]

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
            for (key, wait) in waiting {
                let found = wait.needle.map(text.contains) ?? false
                guard found || ended else { continue }
                waiting[key] = nil
                settled.append((wait.continuation, found || wait.needle == nil))
            }
            return settled
        }
        for (continuation, found) in settled { continuation.resume(returning: found) }
    }

    /// `true` once the command has printed `needle`; `false` when it closed its standard
    /// error without, or when `limit` passed first (the test then stops the command).
    func until(_ needle: String, within limit: Duration = .seconds(120)) async -> Bool {
        await wait(for: needle, within: limit)
    }

    /// What the command printed there so far.
    var sofar: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// Everything the command printed there, once it has closed its standard error.
    func text() async -> String {
        _ = await wait(for: nil, within: .seconds(86_400))
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }

    /// Waits for `needle` (`nil`: the end of the output).
    private func wait(for needle: String?, within limit: Duration) async -> Bool {
        let key = UUID()
        return await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool? in
                if let needle, String(decoding: data, as: UTF8.self).contains(needle) { return true }
                if ended { return needle == nil }
                waiting[key] = (needle, continuation)
                return nil
            }
            if let now { return continuation.resume(returning: now) }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { [self] in
                lock.withLock { waiting.removeValue(forKey: key) }?.continuation.resume(returning: false)
            }
        }
    }
}

extension CLITests {
    /// ``finish(_:_:_:)`` for a command whose standard error a ``StderrWatch`` reads.
    static func finish(_ p: Process, _ out: Pipe, _ watch: StderrWatch) async -> Result {
        // Standard output is drained from now on, on a thread of its own: a command that
        // fills its pipe would otherwise never close its standard error.
        let reading = Task.detached {
            await withCheckedContinuation { continuation in
                Thread {
                    let data = out.fileHandleForReading.readDataToEndOfFile()
                    p.waitUntilExit()
                    continuation.resume(returning: data)
                }.start()
            }
        }
        let stderr = await watch.text()
        let stdout = await reading.value
        let result = Result(status: p.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: stderr, stdoutData: stdout)
        expectNoBuildPath(result.stderr)
        return result
    }
}
