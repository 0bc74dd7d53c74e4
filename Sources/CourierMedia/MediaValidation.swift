import Courier
import Foundation

extension CourierError.Code {
    /// What arrived as a media file is not one: an HTML or JSON page (a server's error
    /// answered with 200), or too small to be media. Nothing of it is kept.
    public static let notMedia = Self(rawValue: "E_NOT_MEDIA")
}

/// Seed 003's "media file validation before final placement", as a pure rule: what the
/// first bytes and the size of a downloaded media file say about it.
public enum MediaValidation {
    /// The error that rejects a media file of `size` bytes starting with `head` (its first
    /// bytes, 512 are plenty), or `nil` when it may be media. `announced` is the media
    /// source's size, when the server gave one; `contentType` the reply's MIME type.
    public static func problem(head: Data, size: Int64, announced: Int64?, minimumSize: Int64, contentType: String? = nil) -> CourierError? {
        if MediaFileTypes.isPage(contentType: contentType) {
            return CourierError(.notMedia, "the server answered \(contentType ?? "a page"), not media (\(size) bytes)")
        }
        if isPage(head: head) {
            return CourierError(.notMedia, "the server answered a web page, not media (\(size) bytes)")
        }
        if let first = text(head).first, first == "{" || first == "[", isText(head) {
            return CourierError(.notMedia, "the server answered JSON, not media (\(size) bytes)")
        }
        if let announced, announced > 0, announced != size {
            return CourierError(.sizeMismatch, "the media source announced \(announced) bytes; \(size) arrived")
        }
        if size < minimumSize {
            return CourierError(.notMedia, "\(size) bytes is too small to be media (the minimum is \(minimumSize))")
        }
        return nil
    }

    /// The first characters of `head`, trimmed and lower-cased.
    static func text(_ head: Data) -> String {
        String(decoding: head.prefix(64), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\u{FEFF}"))).lowercased()
    }

    /// Whether `head` reads as text: UTF-8 (a character cut at its end allowed) without
    /// control bytes but whitespace. A JSON reply is text; binary media whose first byte
    /// happens to be `{` is not (512 random bytes pass this fewer than once in 10^26). A
    /// JSON page in another encoding (Latin-1, UTF-16) passes as media: no server here
    /// answers so, and the size and checksum checks still stand.
    static func isText(_ head: Data) -> Bool {
        let bytes = head.prefix(512)
        let whitespace: Set<UInt8> = [0x09, 0x0A, 0x0C, 0x0D]
        if bytes.contains(where: { ($0 < 0x20 && !whitespace.contains($0)) || $0 == 0x7F }) { return false }
        // A multi-byte character cut by the read: up to 3 trailing bytes of it are dropped.
        for cut in 0...min(3, bytes.count) where String(data: bytes.dropLast(cut), encoding: .utf8) != nil { return true }
        return false
    }

    /// Whether a file starting with `head` is a web page (HTML or XML): never media, and
    /// never a subtitle either.
    public static func isPage(head: Data) -> Bool {
        let t = text(head)
        return t.hasPrefix("<!doctype html") || t.hasPrefix("<html") || t.hasPrefix("<?xml") || t.hasPrefix("<head") || t.hasPrefix("<body")
    }

    /// The first `count` bytes of the file at `url` (fewer when it is shorter).
    static func head(of url: URL, count: Int = 512) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw CourierError(.fileNotFound, "\(url.lastPathComponent) vanished") }
        defer { try? handle.close() }   // a read-only handle: nothing to lose on close
        do { return try handle.read(upToCount: count) ?? Data() } catch { throw FileErrors.error(error, "read", url, .read) }
    }
}
