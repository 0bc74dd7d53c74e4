// libFuzzer entry point for Courier's parsers of untrusted input (scripts/fuzz builds it with
// `swiftc -sanitize=fuzzer,address` together with the parsers' own source files).
// The first byte picks the parser; the rest is the input. Any crash, hang or sanitizer
// report is a bug; a thrown CourierError is the expected answer to bad input.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let text = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    switch selector % 10 {
    case 0: _ = try? ContentRange(parsing: text)
    case 1: _ = try? EntityTag(parsing: text)
    case 2: _ = try? RetryAfter.parse(text, now: Date(timeIntervalSince1970: 0))
    case 3: _ = try? ContentDisposition(parsing: text)
    case 4: _ = HTTPDate.parse(text)
    case 5: _ = try? URLPolicy.validate(text)
    case 6: _ = try? SafePath.validateRelative(text); _ = SafePath.sanitizedFileName(text); _ = try? SafePath.validateIdentifier(text)
    case 7: _ = Redactor.redact(text)
    case 8: _ = try? InputList(parsing: text)
    default:
        if let base = URL(string: "https://a.example/x") { _ = try? URLPolicy.redirectTarget(location: text, from: base) }
        _ = Validator.choose(etag: text, lastModified: text)
    }
    return 0
}
