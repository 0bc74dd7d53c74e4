@testable import CourierCLI
import CourierTestSupport
import Foundation
import Testing

/// `courier` without FoundationNetworking, `courier-urlsession` with it: which arguments ask
/// for the second, what a lone `courier` says, and what each binary maps.
@Suite(.serialized) struct URLSessionBuildCLITests {
    @Test(arguments: [
        (["get", "http://h/f", "--transport", "urlsession"], true),
        (["get", "http://h/f", "--transport=urlsession"], true),
        (["get", "http://h/f", "--hand-off-at", "1M"], true),
        (["get", "http://h/f", "--hand-off-at=1M"], true),
        (["get", "http://h/f", "--transport", "nio"], false),
        (["get", "http://h/f", "--transport"], false),
        (["get", "--", "--transport", "urlsession"], false),
        (["list", "--json"], false),
    ])
    func theArgumentsThatAskForURLSession(_ arguments: [String], _ asks: Bool) {
        #expect(URLSessionBuild.asksForURLSession(arguments) == asks)
    }

    /// The libraries a binary loads, as the dynamic loader resolves them.
    private func loaded(_ binary: String) async throws -> String {
        try await offThePool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
            p.arguments = [binary]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
    }

    @Test func onlyTheURLSessionBuildLoadsFoundationNetworking() async throws {
        let plain = try await loaded(CLITests.binary)
        let sibling = try await loaded(CLITests.binary + "-urlsession")
        #expect(plain.contains("libFoundation") && !plain.contains("FoundationNetworking") && !plain.contains("libcurl"), "\(plain)")
        #expect(sibling.contains("FoundationNetworking"), "\(sibling)")
    }

    /// A `courier` installed without its sibling: a plain download works; one that asks for
    /// URLSession fails at once with E_FNF (exit 5), naming what is missing, and fetches nothing.
    @Test func aLoneCourierSaysWhatIsMissing() async throws {
        let w = try await CLITests.World()
        defer { Task { await w.close() } }
        let data = try w.serve("f.bin", size: 100_000)
        let lone = w.base.appendingPathComponent("bin/courier")
        try FileManager.default.createDirectory(at: lone.deletingLastPathComponent(), withIntermediateDirectories: true)
        let lonePath = lone.path
        try await offThePool { try FileManager.default.copyItem(atPath: CLITests.binary, toPath: lonePath) }   // 130 MB: off the pool

        let refused = try await run(lone.path, ["get", w.origin.url("/f.bin"), "-o", w.out.appendingPathComponent("u.bin").path,
                                                "--transport", "urlsession", "--db", w.db, "-q"])
        #expect(refused.status == 5, "\(refused.stderr)")
        #expect(refused.stderr.contains("E_FNF") && refused.stderr.contains("courier-urlsession"), "\(refused.stderr)")
        #expect(w.origin.requests.isEmpty && !FileManager.default.fileExists(atPath: w.out.appendingPathComponent("u.bin").path))

        let plain = try await run(lone.path, ["get", w.origin.url("/f.bin"), "-o", w.out.appendingPathComponent("n.bin").path, "--db", w.db, "-q"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try Data(contentsOf: w.out.appendingPathComponent("n.bin")) == data)
    }

    private func run(_ binary: String, _ args: [String]) async throws -> CLITests.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return await CLITests.finish(p, out, err)
    }
}
