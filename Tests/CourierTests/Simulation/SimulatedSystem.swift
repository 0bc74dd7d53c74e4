import CourierTestSupport
import Foundation
import HTTPTypes
@_spi(Testing) @testable import CourierCore

/// The system's background transfers in a simulated world (issue 46): a task for each
/// hand-off, outside every process of the app (it goes on through a kill, as the system's
/// does), that asks the ``SimulatedServer`` for what the hand-off's request names, and gives
/// what came to whichever process of the app is alive when it ends: adopted
/// (`adoptHandOff`, its status, headers and file), or taken back when the task failed (a
/// cut, a stall past its timeout). Its waits are on the world's clock.
///
/// The app's side is what an app does with `BackgroundTransfers`: it hands a download off
/// and starts a task with the request; at a relaunch it takes back every handed-off
/// download that has no task left (the system lost it, or it ended while the app was dead).
final class SimulatedSystem: @unchecked Sendable { // state under `lock`
    private let lock = NSLock()
    /// The live tasks for each download (a cancelled hand-off's task may still run beside a
    /// later one's).
    private var tasks: [String: Int] = [:]
    /// The app's live process, to deliver to; `nil` while one is killed and the next not yet
    /// launched.
    private var app: Downloader?
    private var made = 0
    let server: SimulatedServer
    let directory: URL
    let trace: SimulationScenario.Trace

    init(server: SimulatedServer, directory: URL, trace: SimulationScenario.Trace) {
        self.server = server
        self.directory = directory
        self.trace = trace
    }

    private func locked<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }

    /// The process the system delivers to from now on (`nil`: none alive).
    func deliver(to downloader: Downloader?) { locked { app = downloader } }

    /// Whether a task of download `id` is still running.
    func hasTask(_ id: String) -> Bool { locked { tasks[id, default: 0] > 0 } }

    /// No task is running.
    var idle: Bool { locked { tasks.values.allSatisfy { $0 == 0 } } }

    /// Starts the system's task for `request` after `delay` (the system's own scheduling).
    func begin(_ request: HandOffRequest, after delay: Duration) {
        let number = locked { () -> Int in
            tasks[request.id, default: 0] += 1
            made += 1
            return made
        }
        trace.add("system: task \(number) for \(request.id) from byte \(request.keptBytes)")
        let clock = server.clock
        _ = EngineExecutor.current.task {
            var failed: String?
            var reply: SimulatedServer.Reply?
            do {
                try await clock.sleep(for: delay, .simulatedNetwork)
                let asked = try TransportRequest(url: request.url, headers: request.headers + request.credentials)
                let answer = self.server.reply(to: asked, fromSystem: true)
                if let head = answer.headDelay { try await clock.sleep(for: head, .simulatedNetwork) }
                let parts = { (bytes: Int) in Int64(bytes / (64 << 10) + 1) }
                if let failure = answer.failure {
                    failed = failure.code == .connectionRefused ? "the connection was refused" : "the stream was reset"
                } else if let cut = answer.cutAfter {
                    try await clock.sleep(for: self.server.partEvery * parts(cut), .simulatedNetwork)
                    failed = "the connection was cut"
                } else if answer.stallAfter != nil {
                    try await clock.sleep(for: .seconds(60), .simulatedNetwork)   // the task's request timeout
                    failed = "the task timed out"
                } else {
                    try await clock.sleep(for: self.server.partEvery * parts(answer.body.count), .simulatedNetwork)
                    reply = answer
                }
            } catch {
                return   // the world ended
            }
            // The system calls the app's delegate once: the task is over for it from here.
            self.locked { self.tasks[request.id, default: 0] -= 1 }
            await self.end(task: number, request.id, failed: failed, reply: reply)
        }
    }

    /// Gives the task's end to the app's live process (waiting for a relaunch if none is).
    private func end(task number: Int, _ id: String, failed: String?, reply: SimulatedServer.Reply?) async {
        var app = locked { self.app }
        while app == nil {
            do { try await server.clock.sleep(for: .milliseconds(100), .simulatedNetwork) } catch { return }
            app = locked { self.app }
        }
        guard let app else { return }
        do {
            if let failed {
                let result = try await app.takeBack(id: id, "the system's task failed: \(failed)")
                trace.add("system: task \(number) for \(id) failed (\(failed)); taken back: \(result)")
                return
            }
            guard let reply else { return }
            let body = directory.appendingPathComponent("system-task-\(number)")
            try reply.body.write(to: body)
            defer { try? FileManager.default.removeItem(at: body) }   // the app deletes the task's file once adopted; gone already is fine
            var fields = HTTPFields()
            for (name, value) in reply.headers { fields[HTTPField.Name(name)!] = value }
            let result = try await app.adoptHandOff(id: id, status: reply.status, headers: fields, body: body)
            trace.add("system: task \(number) for \(id) ended \(reply.status); adopted: \(result)")
        } catch let error as CourierError {
            trace.add("system: task \(number) for \(id): the app's step failed: \(error.code.rawValue)")
        } catch {
            trace.add("system: task \(number) for \(id): the app's step failed: \(error)")
        }
    }
}
