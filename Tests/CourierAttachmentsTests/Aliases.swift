import CourierAttachments

/// Swift Testing has an `Attachment` type of its own; the tests mean the seed's.
typealias Attachment = CourierAttachments.Attachment
