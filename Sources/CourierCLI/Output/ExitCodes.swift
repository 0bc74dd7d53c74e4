import ArgumentParser
import Courier
import CourierDocuments
import CourierMedia

/// The CLI's exit codes: one per kind of outcome, so scripts can tell them apart.
enum ExitCodes {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let network: Int32 = 3
    static let integrity: Int32 = 4
    static let storage: Int32 = 5
    static let notFound: Int32 = 6
    static let leased: Int32 = 7
    static let usage: Int32 = 64
    static let interrupted: Int32 = 130
    static let pipeClosed: Int32 = 141

    static let table = """
          0    success
          1    other failure (E_DATABASE, E_INVALID_STATE, E_CONFLICT, E_COMPLETION_HOOK, E_UNEXPECTED)
          3    network or HTTP failure (E_NETWORK, E_CONNECTION_REFUSED, E_TIMEOUT, E_TLS, E_HTTP_4XX, E_HTTP_5XX, E_ACCESS_DENIED, E_PROTOCOL, redirects;
               a remote storage's refusal: E_REMOTE_STORAGE, E_REMOTE_NOT_FOUND)
          4    integrity failure (E_CHECKSUM_MISMATCH, E_SIZE_MISMATCH, E_BODY_TOO_LONG, E_NOT_MEDIA)
          5    disk or file failure (E_NO_SPACE, E_FNF, E_FNF_READ, E_FNF_WRITE, E_PERMISSION, E_READ, E_WRITE, E_ENCODING, E_SYSTEM)
          6    no such download (E_NOT_FOUND)
          7    the download is running in another process (E_LEASED)
         64    usage error (bad flags, invalid URL, path or id; E_URL_NEEDED: give the URL again)
        130    interrupted: the download is paused and resumes on the next run
        141    the reader of standard output went away (`| head`): ended as SIGPIPE ends a process, what was saved kept
        """

    /// The exit code for an error code.
    static func code(for error: CourierError.Code) -> Int32 {
        switch error {
        case .network, .networkNotAllowed, .connectionRefused, .timeout, .tls, .httpClientError, .httpServerError, .accessDenied, .protocolViolation,
             .malformedHeader, .shortBody, .tooManyRedirects, .insecureRedirect, .remoteStorage, .remoteNotFound:
            return network
        case .checksumMismatch, .sizeMismatch, .bodyTooLong, .notMedia:
            return integrity
        case .noSpace, .fileNotFound, .fileRead, .fileWrite, .permissionDenied, .readFailed, .writeFailed, .invalidEncoding, .system:
            return storage
        case .notFound:
            return notFound
        case .leased:
            return leased
        case .invalidURL, .unsupportedScheme, .invalidPath, .invalidArgument, .urlNeeded:
            return usage
        case .paused, .cancelled:
            return interrupted
        default:
            return failure
        }
    }
}

/// Prints a Courier error (`CODE: message` on stderr; with `json`, also an object with
/// `"ok": false`, the code and the message on stdout) and exits with its code.
func failure(_ error: CourierError, json: Bool = false) -> ExitCode {
    // stderr first: a stdout that cannot take the JSON ends the process (Terminal.raw), and
    // the error it was reporting is then already said.
    Terminal.error("courier: \(error.code.rawValue): \(error.message)")
    if json { try? printJSON(JSONFailure(code: error.code.rawValue, message: error.message, system: error.system)) }   // encoding a plain struct: cannot fail
    return ExitCode(ExitCodes.code(for: error.code))
}

/// What `--json` prints when a command fails: real booleans, never `"false"`.
struct JSONFailure: Encodable {
    var ok = false
    var code: String
    var message: String
    /// The system's own error (domain and code) behind an `E_SYSTEM` one.
    var system: SystemError?
}
