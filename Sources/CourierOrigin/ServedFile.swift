import Foundation

extension CourierOrigin {
    /// A file the origin serves: where it is, its size and modification time.
    struct ServedFile {
        var url: URL
        var size: Int64
        var mtime: Double
        /// A Jellyfin transcoding: served without ranges.
        var transcoded = false
    }
}
