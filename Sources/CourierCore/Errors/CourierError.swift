import Foundation

/// The one error type Courier throws and records.
///
/// Match on ``code`` in a `catch`:
/// ```swift
/// catch let error as CourierError where error.code == .checksumMismatch { … }
/// ```
/// The ``message`` is meant for people and never contains secrets: URLs in it are redacted.
public struct CourierError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable error code. The set is extensible: libraries built on
    /// Courier add their own codes as static constants in an extension.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The code's text, such as `E_NO_SPACE`; stored in the database and printed by the CLI.
        public let rawValue: String
        /// Makes a code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's text.
        public var description: String { rawValue }
    }

    /// What went wrong, as a code.
    public var code: Code
    /// What went wrong, for people. Secrets are redacted.
    public var message: String
    /// The HTTP status that caused the error, when there was one.
    public var httpStatus: Int?
    /// A description of the lower-level error, redacted, when there was one.
    public var underlying: String?
    /// The operating system's own error (domain and code) when it caused this one and
    /// Courier has no code of its own for it (an iCloud download's error other than "no such
    /// file"): branch on it rather than on the text.
    public var system: SystemError?

    /// Makes an error. The message and the underlying error's description are redacted.
    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, underlying: (any Error)? = nil, system: SystemError? = nil) {
        self.code = code
        self.message = Redactor.redact(message)
        self.httpStatus = httpStatus
        self.underlying = underlying.map { Redactor.redact(String(describing: $0)) }
        self.system = system
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

extension CourierError.Code {
    // Input
    /// A URL that cannot be parsed or has no host.
    public static let invalidURL = Self(rawValue: "E_INVALID_URL")
    /// A scheme other than http or https.
    public static let unsupportedScheme = Self(rawValue: "E_UNSUPPORTED_SCHEME")
    /// A path that is absolute, climbs out of the root, or holds forbidden characters.
    public static let invalidPath = Self(rawValue: "E_INVALID_PATH")
    /// A malformed SHA-256 or another argument the caller got wrong.
    public static let invalidArgument = Self(rawValue: "E_INVALID_ARGUMENT")
    /// The stored URL had its secrets redacted (they never reach the database) and this
    /// process knows no full URL for it: give the URL again, or a ``URLRefreshing`` hook.
    /// A redacted URL is never sent.
    public static let urlNeeded = Self(rawValue: "E_URL_NEEDED")

    // Redirects
    /// A redirect from https to http.
    public static let insecureRedirect = Self(rawValue: "E_INSECURE_REDIRECT")
    /// More redirects than allowed (5).
    public static let tooManyRedirects = Self(rawValue: "E_TOO_MANY_REDIRECTS")

    // HTTP
    /// A 4xx answer other than the ones retried (408, 429) or refreshed (401, 403, 410).
    public static let httpClientError = Self(rawValue: "E_HTTP_4XX")
    /// A 5xx answer, after the retries ran out.
    public static let httpServerError = Self(rawValue: "E_HTTP_5XX")
    /// 401, 403 or 410, still so after a URL refresh (or with no refresher).
    public static let accessDenied = Self(rawValue: "E_ACCESS_DENIED")
    /// A header that does not parse.
    public static let malformedHeader = Self(rawValue: "E_MALFORMED_HEADER")
    /// A reply that breaks the protocol (a 206 with no usable Content-Range, an unexpected status).
    public static let protocolViolation = Self(rawValue: "E_PROTOCOL")

    // Transport
    /// The connection failed or dropped.
    public static let network = Self(rawValue: "E_NETWORK")
    /// The host refused the connection: nothing listens at that address and port. Retried
    /// a few times only (``RetryPolicy/maxRefusedAttempts``), since it rarely passes.
    public static let connectionRefused = Self(rawValue: "E_CONNECTION_REFUSED")
    /// The system's network policy refuses the transfer now (URLSession: cellular,
    /// expensive or Low Data Mode networks not allowed for it). Not retried by the engine:
    /// resume it when the device is on another network.
    public static let networkNotAllowed = Self(rawValue: "E_NETWORK_NOT_ALLOWED")
    /// The TLS handshake failed: an untrusted, expired or mismatched certificate. Not
    /// retried: waiting does not make a certificate trusted.
    public static let tls = Self(rawValue: "E_TLS")
    /// No byte arrived within the idle timeout (seed 004's code).
    public static let timeout = Self(rawValue: "E_TIMEOUT")
    /// The body ended before the announced length.
    public static let shortBody = Self(rawValue: "E_SHORT_BODY")
    /// The body ran past the announced length or the maximum size.
    public static let bodyTooLong = Self(rawValue: "E_BODY_TOO_LONG")

    // Integrity
    /// The finished file's size differs from the announced total.
    public static let sizeMismatch = Self(rawValue: "E_SIZE_MISMATCH")
    /// The finished file's SHA-256 differs from the expected one.
    public static let checksumMismatch = Self(rawValue: "E_CHECKSUM_MISMATCH")

    // Files (seed 004's codes among them). The three `E_FNF` codes mean *no such file* and
    // nothing else; other failures have codes of their own, with the system's error as
    // ``CourierError/underlying``.
    /// Not enough free space, before start or while writing (ENOSPC, EDQUOT, EFBIG).
    public static let noSpace = Self(rawValue: "E_NO_SPACE")
    /// A file that should exist does not.
    public static let fileNotFound = Self(rawValue: "E_FNF")
    /// A file was not found when read (it existed, or was announced, and is gone).
    public static let fileRead = Self(rawValue: "E_FNF_READ")
    /// The place to write a file does not exist (its folder is gone).
    public static let fileWrite = Self(rawValue: "E_FNF_WRITE")
    /// The system refused access (EACCES, EPERM, EROFS: permissions, a read-only volume).
    public static let permissionDenied = Self(rawValue: "E_PERMISSION")
    /// Reading a file failed for another reason (an I/O error, a file that changed under us).
    public static let readFailed = Self(rawValue: "E_READ")
    /// Writing, syncing, renaming or removing a file failed for another reason (an I/O
    /// error, a directory in the way, not a regular file).
    public static let writeFailed = Self(rawValue: "E_WRITE")

    // Store and lifecycle
    /// No download record with that id.
    public static let notFound = Self(rawValue: "E_NOT_FOUND")
    /// The database failed or is corrupt.
    public static let database = Self(rawValue: "E_DATABASE")
    /// The operation does not fit the download's state.
    public static let invalidState = Self(rawValue: "E_INVALID_STATE")
    /// The download was paused (by the caller, a signal, or another process).
    public static let paused = Self(rawValue: "E_PAUSED")
    /// The download was cancelled and discarded.
    public static let cancelled = Self(rawValue: "E_CANCELLED")
    /// Another process (or downloader) holds the download's lease and is running it.
    public static let leased = Self(rawValue: "E_LEASED")
    /// The app's completion hook threw inside the write that would have completed the
    /// download: nothing of that write happened (the record is failed, its whole partial
    /// kept; resuming runs the hook again without a byte fetched).
    public static let completionHook = Self(rawValue: "E_COMPLETION_HOOK")
    /// The operating system's own error, with no code of Courier's: its domain and code are
    /// in ``CourierError/system`` (an iCloud download that failed other than "no such file").
    public static let system = Self(rawValue: "E_SYSTEM")
    /// A failure Courier has no better code for (the message says what); a bug to report.
    public static let unexpected = Self(rawValue: "E_UNEXPECTED")
}
