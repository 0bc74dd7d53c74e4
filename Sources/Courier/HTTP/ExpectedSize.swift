/// A size the caller knows (``DownloadRequest/expectedSize``), held against a reply.
extension BodyPlan {
    /// The plan for a file that must have `expected` bytes (`nil`: the plan as it is). A
    /// reply announcing another size, or starting past it, is `E_SIZE_MISMATCH`; one of
    /// unannounced length (chunked) takes `expected` as its size, so a body that ends short
    /// is resumed rather than taken for the whole file.
    public func holding(to expected: Int64?) throws(CourierError) -> BodyPlan {
        guard let expected else { return self }
        if let total = totalBytes, total != expected {
            throw CourierError(.sizeMismatch, "the server announced \(total) bytes; \(expected) were expected")
        }
        if offset > expected { throw CourierError(.sizeMismatch, "the reply starts at byte \(offset), past the \(expected) bytes expected") }
        var held = self
        held.totalBytes = expected
        return held
    }
}
