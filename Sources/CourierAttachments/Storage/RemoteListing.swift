import Courier
import Foundation

/// One object in remote storage.
public struct RemoteObject: Sendable, Equatable, Codable {
    /// The key relative to the storage's root or prefix, `/`-separated.
    public var key: String
    /// Its size in bytes.
    public var size: Int64
    /// A validator (S3 ETag, or size and mtime for a folder), when known.
    public var etag: String?

    /// Makes an entry.
    public init(key: String, size: Int64, etag: String? = nil) {
        self.key = key
        self.size = size
        self.etag = etag
    }
}

/// A remote storage that can list what it holds.
public protocol RemoteListing: RemoteStorage {
    /// Every object, in key order.
    func list() async throws -> [RemoteObject]
}

extension LocalRemoteStorage: RemoteListing {
    /// Every regular file under the directory (hidden temporary files excluded).
    public func list() async throws -> [RemoteObject] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey]) else {
            return []
        }
        var out: [RemoteObject] = []
        let base = directory.standardizedFileURL.path
        for case let url as URL in walker {
            let values = try url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey])
            guard values.isRegularFile == true, !url.lastPathComponent.hasPrefix(".") else { continue }
            let key = String(url.standardizedFileURL.path.dropFirst(base.count + 1))
            let size = Int64(values.fileSize ?? 0)
            out.append(RemoteObject(key: key, size: size, etag: Self.etag(size: size, modified: values.contentModificationDate)))
        }
        return out.sorted { $0.key < $1.key }
    }
}

extension S3RemoteStorage: RemoteListing {
    /// ListObjectsV2 under the prefix, following continuation tokens.
    public func list() async throws -> [RemoteObject] {
        var out: [RemoteObject] = []
        var token: String?
        repeat {
            var query = "list-type=2&prefix=\(SigV4Signer.uriEncode(configuration.prefix))"
            if let token { query += "&continuation-token=\(SigV4Signer.uriEncode(token))" }
            let xml = try await listPage(query: query)
            for block in Self.xmlBlocks("Contents", in: xml) {
                guard let key = Self.xmlValue("Key", in: block), let size = Self.xmlValue("Size", in: block).flatMap({ Int64($0) }) else { continue }
                let relative = String(key.dropFirst(configuration.prefix.count))
                out.append(RemoteObject(key: Self.xmlUnescape(relative), size: size, etag: Self.xmlValue("ETag", in: block).map(Self.xmlUnescape)))
            }
            token = Self.xmlValue("IsTruncated", in: xml) == "true" ? Self.xmlValue("NextContinuationToken", in: xml) : nil
        } while token != nil
        return out
    }

    static func xmlBlocks(_ tag: String, in xml: String) -> [String] {
        var blocks: [String] = []
        var rest = xml[...]
        while let start = rest.range(of: "<\(tag)>"), let end = rest.range(of: "</\(tag)>", range: start.upperBound..<rest.endIndex) {
            blocks.append(String(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return blocks
    }

    static func xmlUnescape(_ s: String) -> String {
        s.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
    }
}
