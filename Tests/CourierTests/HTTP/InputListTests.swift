import Testing
@testable import CourierCore

@Suite struct InputListTests {
    let sha = String(repeating: "ab", count: 32)

    @Test func parsesAria2StyleEntries() throws {
        let text = """
            # mirrors and options as aria2 writes them
            https://a.example/x/one.iso\thttps://mirror.example/one.iso
              out=images/one.iso
              sha256=\(sha.uppercased())

            http://b.example/two.bin
            \tdir=sub
            \tchecksum=sha-256=\(sha)
            \tsplit=4
            https://c.example/
            """
        let list = try InputList(parsing: text + "\r\n")
        #expect(list.entries.count == 3)
        #expect(list.entries[0] == InputList.Entry(url: "https://a.example/x/one.iso", out: "images/one.iso", dir: nil, sha256: sha, line: 2))
        #expect(list.entries[1].relativePath == "sub/two.bin" && list.entries[1].sha256 == sha)
        #expect(list.entries[2].relativePath == "index.html")
    }

    @Test func refusesWhatIsWrongWithItsLine() {
        let cases: [(String, CourierError.Code, String)] = [
            ("  out=a\n", .invalidArgument, "line 1"),
            ("https://a/x\n  out=../../etc/passwd\n", .invalidPath, "line 2"),
            ("https://a/x\n  out=/etc/passwd\n", .invalidPath, "line 2"),
            ("https://a/x\n  dir=a/../../b\n", .invalidPath, "line 2"),
            ("https://a/x\n  sha256=123\n", .invalidArgument, "line 2"),
            ("https://a/x\n  checksum=md5=abc\n", .invalidArgument, "line 2"),
            ("https://a/x\n  frobnicate=1\n", .invalidArgument, "unknown option"),
            ("https://a/x\n  novalue\n", .invalidArgument, "key=value"),
            ("ftp://a/x\n", .invalidArgument, "line 1"),
            ("# c\nnot a url\n", .invalidArgument, "line 2"),
        ]
        for (text, code, fragment) in cases {
            #expect { try InputList(parsing: text) } throws: { e in
                guard let e = e as? CourierError else { return false }
                return e.code == code && e.message.contains(fragment)
            }
        }
    }

    @Test func anEmptyListHasNoEntries() throws {
        #expect(try InputList(parsing: "# nothing\n\n").entries.isEmpty)
    }
}
