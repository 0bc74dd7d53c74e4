/// A size the caller knows (``DownloadRequest/expectedSize``), held against a reply.
extension BodyPlan {
    /// Checks the plan of a file that must have `expected` bytes (`nil`: nothing to check).
    /// A reply announcing another size, or starting past it, is `E_SIZE_MISMATCH`. The plan
    /// is returned as it was: the caller's size is never taken for the server's, so a 206 or
    /// 416 that later shows another real size fails too, and a body of unannounced length
    /// is judged when it ends (too long while it arrives, too short at the end).
    public func holding(to expected: Int64?) throws(CourierError) -> BodyPlan {
        guard let expected else { return self }
        if let total = totalBytes, total != expected {
            throw CourierError(.sizeMismatch, "the server announced \(total) bytes; \(expected) were expected")
        }
        if offset > expected { throw CourierError(.sizeMismatch, "the reply starts at byte \(offset), past the \(expected) bytes expected") }
        return self
    }
}
