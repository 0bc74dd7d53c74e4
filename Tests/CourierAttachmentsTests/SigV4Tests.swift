import CourierTestSupport
import Foundation
import Testing
@testable import CourierAttachments

/// AWS's published S3 Signature V4 examples (AKIAIOSFODNN7EXAMPLE, 2013-05-24, us-east-1).
@Suite struct SigV4Tests {
    let signer = SigV4Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
    let date = Date(timeIntervalSince1970: 1_369_353_600)   // 20130524T000000Z

    func signature(_ headers: [(String, String)]) -> String? {
        headers.first { $0.0 == "Authorization" }?.1.components(separatedBy: "Signature=").last
    }

    @Test func getObjectExample() {
        let h = signer.sign(method: "GET", url: URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")!,
                            headers: [("Range", "bytes=0-9")], payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(signature(h) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(h.first { $0.0 == "Authorization" }?.1.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date") == true)
    }

    @Test func putObjectExample() {
        let h = signer.sign(method: "PUT", url: URL(string: "https://examplebucket.s3.amazonaws.com/test$file.text")!,
                            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                            payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", date: date)
        #expect(signature(h) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func listObjectsExample() {
        let h = signer.sign(method: "GET", url: URL(string: "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J")!,
                            payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(signature(h) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func presignedURLExample() {
        let url = signer.presign(url: URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")!, expires: 86400, date: date)
        #expect(url.absoluteString.hasSuffix("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"))
        #expect(url.absoluteString.contains("X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"))
    }

    /// Formatted and parsed with plain arithmetic (no ICU): the fields, padding, a leap day,
    /// a fraction of a second dropped, and S3's dates read back.
    @Test func datesWithoutAFormatter() {
        #expect(SigV4Signer.timestamps(date) == ("20130524T000000Z", "20130524"))
        #expect(SigV4Signer.timestamps(Date(timeIntervalSince1970: 951_782_399.999)) == ("20000228T235959Z", "20000228"))
        #expect(SigV4Signer.timestamps(Date(timeIntervalSince1970: 951_868_205)) == ("20000229T235005Z", "20000229"))
        #expect(SigV4Signer.uriEncode("a b/é~") == "a%20b%2F%C3%A9~")
        #expect(S3RemoteStorage.isoDate("2013-05-24T00:00:00.000Z") == date)
        #expect(S3RemoteStorage.isoDate("2013-05-24T00:00:00Z") == date)
        #expect(S3RemoteStorage.isoDate("2013-05-24T00:00:00.500Z") == date.addingTimeInterval(0.5))
        #expect(S3RemoteStorage.isoDate("2013-05-24T00:00:00") == nil)
        #expect(S3RemoteStorage.isoDate("yesterday") == nil)
    }

    /// The same request signed by botocore (an independent implementation, installed here),
    /// with an encoded key, a query and an extra signed header.
    @Test(.enabled(if: Botocore.isAvailable)) func agreesWithBotocore() async throws {
        let url = "https://127.0.0.1:5000/bucket/dir/na%20me%2B1.bin?partNumber=3&uploadId=a%2Fb"
        // Python and botocore start in a child process: waited for off the cooperative pool.
        let (theirs, amzDate) = try await offThePool { try Botocore.sign(method: "PUT", url: url, headers: ["Content-Length": "5"]) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let when = try #require(f.date(from: amzDate))
        let ours = signer.sign(method: "PUT", url: URL(string: url)!, headers: [("Content-Length", "5")], payloadHash: SigV4Signer.emptyPayloadHash, date: when)
        #expect(signature(ours) == theirs)
    }
}

enum Botocore {
    static let isAvailable: Bool = (try? run("import botocore")) != nil

    /// botocore's signature and the X-Amz-Date it signed with.
    static func sign(method: String, url: String, headers: [String: String]) throws -> (String, String) {
        let hdrs = headers.map { "'\($0.key)': '\($0.value)'" }.joined(separator: ", ")
        let script = """
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        creds = Credentials('AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY')
        req = AWSRequest(method='\(method)', url='\(url)', headers={\(hdrs)})
        S3SigV4Auth(creds, 's3', 'us-east-1').add_auth(req)
        assert req.headers['X-Amz-Content-SHA256'] == '\(SigV4Signer.emptyPayloadHash)'
        print(req.headers['Authorization'].split('Signature=')[1], req.headers['X-Amz-Date'])
        """
        let parts = try run(script).split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard parts.count == 2 else { throw CocoaError(.executableLoad) }
        return (parts[0], parts[1])
    }

    static func run(_ script: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
        return String(decoding: data, as: UTF8.self)
    }
}
