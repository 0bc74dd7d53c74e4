import Courier
import Foundation
import Testing
@testable import CourierCLI

/// iCloud's own errors at the command line (issue 47): `E_SYSTEM` exits as a file failure,
/// and `--json` carries the system's domain and code beside Courier's, never text only.
/// (iCloud itself is Darwin-only: the error is made here as the documents module makes it.)
@Suite struct SystemErrorCLITests {
    @Test func aSystemErrorKeepsItsDomainAndCodeInJSON() throws {
        let error = CourierError(.system, "iCloud could not download it: over quota (NSCocoaErrorDomain 4354)",
                                 system: SystemError(domain: "NSCocoaErrorDomain", code: 4354, underlyingDomain: "CKErrorDomain", underlyingCode: 25))
        #expect(ExitCodes.code(for: error.code) == ExitCodes.storage)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(JSONFailure(code: error.code.rawValue, message: error.message, system: error.system)), as: UTF8.self)
        #expect(json.contains(#""system":{"code":4354,"domain":"NSCocoaErrorDomain","underlyingCode":25,"underlyingDomain":"CKErrorDomain"}"#))
        #expect(json.contains(#""code":"E_SYSTEM""#))
        // Without a system error, no `system` key at all.
        let plain = String(decoding: try encoder.encode(JSONFailure(code: "E_NETWORK", message: "x", system: nil)), as: UTF8.self)
        #expect(!plain.contains("system"))
    }
}
