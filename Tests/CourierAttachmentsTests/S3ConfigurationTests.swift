import Courier
import CourierTestSupport
import Foundation
import Testing
@testable import CourierAttachments

@Suite struct S3ConfigurationTests {
    let env = ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "TOK", "AWS_REGION": "eu-west-1"]

    @Test func parsesRemoteURLsAndEnvironment() throws {
        let c = try S3Configuration(url: "s3://my-bucket/photos?endpoint=http://127.0.0.1:5000&region=us-east-2", environment: env)
        #expect(c.bucket == "my-bucket" && c.prefix == "photos/" && c.region == "us-east-2")
        #expect(c.endpoint?.absoluteString == "http://127.0.0.1:5000" && c.addressing == .pathStyle)
        #expect(c.accessKeyID == "AK" && c.sessionToken == "TOK")
        let d = try S3Configuration(url: "s3://b?style=virtual", environment: env)
        #expect(d.prefix == "" && d.region == "eu-west-1" && d.addressing == .virtualHost && d.endpoint == nil)
        #expect(throws: CourierError.self) { try S3Configuration(url: "s3://b", environment: [:]) }
        #expect(throws: CourierError.self) { try S3Configuration(url: "http://b/x", environment: env) }
    }

    @Test func pathStyleAndVirtualHostURLs() throws {
        var c = S3Configuration(bucket: "bkt", prefix: "att/", endpoint: URL(string: "http://127.0.0.1:5000")!, accessKeyID: "a", secretAccessKey: "s")
        let path = S3RemoteStorage(configuration: c, transport: testTransport())
        let a = Attachment(id: "x", filename: "a b+c.jpg", state: .queuedUpload)
        #expect(try path.objectURL(key: try path.key(for: a)).absoluteString == "http://127.0.0.1:5000/bkt/att/a%20b%2Bc.jpg")
        c.addressing = .virtualHost
        c.endpoint = nil
        c.region = "eu-central-1"
        let virtual = S3RemoteStorage(configuration: c, transport: testTransport())
        #expect(try virtual.objectURL(key: "att/k.jpg").absoluteString == "https://bkt.s3.eu-central-1.amazonaws.com/att/k.jpg")
        #expect(try virtual.objectURL(key: "k", query: "uploads=").absoluteString == "https://bkt.s3.eu-central-1.amazonaws.com/k?uploads=")
        // A hostile file name never becomes a key outside the prefix.
        #expect(throws: CourierError.self) { try path.key(for: Attachment(id: "y", filename: "../../etc", state: .queuedUpload)) }
    }

    /// A remote that cannot form a URL (a region with a space or a colon, a bucket that is no
    /// host name or an IPv6 endpoint for virtual hosts) is E_INVALID_URL, never a crash.
    @Test(arguments: [("us-east-1 ", "bkt", nil, false), ("a:b", "bkt", nil, false), ("us-east-1", "my bucket", nil, true),
                      ("us-east-1", "bkt", "http://[::1]:9000", true)] as [(String, String, String?, Bool)])
    func aRemoteThatFormsNoURLIsAnError(region: String, bucket: String, endpoint: String?, virtual: Bool) throws {
        let c = S3Configuration(bucket: bucket, region: region, endpoint: endpoint.flatMap(URL.init(string:)), addressing: virtual ? .virtualHost : .pathStyle,
                                accessKeyID: "a", secretAccessKey: "s")
        let storage = S3RemoteStorage(configuration: c, transport: testTransport())
        #expect { try storage.objectURL(key: "k") } throws: { ($0 as? CourierError)?.code == .invalidURL }
    }

    @Test func presignedLinksAreRedactedInErrorsAndLogs() {
        let signer = SigV4Signer(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "SECRET", region: "us-east-1")
        let url = signer.presign(url: URL(string: "http://127.0.0.1:5000/b/k")!, expires: 60).absoluteString
        let redacted = Redactor.redact("GET \(url) failed")
        #expect(!redacted.contains(url.components(separatedBy: "X-Amz-Signature=")[1]))
        #expect(redacted.contains("X-Amz-Signature=REDACTED"))
    }
}
