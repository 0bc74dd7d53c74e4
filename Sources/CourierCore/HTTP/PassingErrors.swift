import Foundation

extension CourierError {
    /// Whether the error may pass if the request is made again: a network failure, a
    /// refused connection, a timeout, a body cut short, a 5xx, or a header mangled in transit.
    /// (408 and 429 are retried by ``ResponseDisposition`` and ``RangeReply`` themselves,
    /// with their `Retry-After`.) Every other error ends the download; ``RetryBudget``
    /// counts these.
    package var isPassing: Bool {
        [.network, .connectionRefused, .timeout, .shortBody, .httpServerError, .malformedHeader].contains(code)
    }
}
