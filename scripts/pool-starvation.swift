// The cooperative pool's starvation, measured (RELIABILITY.md, the hogged runs of b278bd3):
// N tasks block their threads on a child process (sleep 5); how long does a 100 ms
// Task.sleep elsewhere then take? Run: swiftc -parse-as-library -O scripts/pool-starvation.swift
// -o /tmp/pool-starvation && /tmp/pool-starvation 1 && /tmp/pool-starvation 2
// On 2 cores: with 1 blocked, 0.1 s; with 2 blocked, the whole 5 s.

import Foundation

func blockOnChild(_ seconds: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sleep")
    p.arguments = [seconds]
    let out = Pipe()
    p.standardOutput = out
    try! p.run()
    _ = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
}

@main struct PoolStarvation {
    static func main() async {
        let blocked = Int(CommandLine.arguments.dropFirst().first ?? "2") ?? 2
        for _ in 0..<blocked { Task.detached { blockOnChild("5") } }
        let start = ContinuousClock.now
        try? await Task.sleep(for: .milliseconds(100))
        print("\(blocked) pool thread(s) blocked on a child: a 100 ms sleep took \(ContinuousClock.now - start) (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    }
}
