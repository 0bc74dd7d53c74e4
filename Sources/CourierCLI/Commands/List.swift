import ArgumentParser
import Courier
import Foundation

/// A record as the CLI shows it: URL redacted, paths absolute (the CLI's root is `/`).
struct RecordView: Codable {
    var id: String
    var state: String
    var url: String
    var path: String
    var bytesReceived: Int64
    var totalBytes: Int64?
    var sha256: String?
    var priority: Int
    var attempts: Int
    /// Bytes received and thrown away since the download last started afresh (a server
    /// that ignores ranges, a body cut before the bytes kept).
    var discardedBytes: Int64
    var errorCode: String?
    var errorMessage: String?
    var mediaId: String?
    var mediaType: String?
    var createdAt: String
    var updatedAt: String
    /// The process running it (its lease owner), while the lease is in force.
    var runningIn: String?

    private static let iso = Date.ISO8601FormatStyle()

    init(_ r: DownloadRecord, now: Date = Date()) {
        let iso = Self.iso
        id = r.id
        state = r.state.rawValue
        url = Redactor.redact(url: r.remoteUrl)
        path = "/" + r.localFinalPath
        bytesReceived = r.bytesReceived
        totalBytes = r.totalBytes
        sha256 = r.expectedSHA256
        priority = r.priority
        attempts = r.attemptCount
        discardedBytes = r.bytesDiscarded
        errorCode = r.lastErrorCode
        errorMessage = r.lastErrorMessage
        mediaId = r.mediaId
        mediaType = r.mediaType
        createdAt = iso.format(r.createdAt)
        updatedAt = iso.format(r.updatedAt)
        if let owner = r.leaseOwner, let expiry = r.leaseExpiresAt, expiry > now { runningIn = owner }
    }

    var progressText: String {
        guard let totalBytes, totalBytes > 0 else { return Format.bytes(bytesReceived) }
        return String(format: "%@ of %@ (%.1f%%)", Format.bytes(bytesReceived), Format.bytes(totalBytes), Double(bytesReceived) / Double(totalBytes) * 100)
    }
}

func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    Terminal.out(String(decoding: try encoder.encode(value), as: UTF8.self))
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List downloads.")

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @OptionGroup var store: StoreOptions

    func run() async throws {
        do {
            let now = Date()
            let records = try await store.openExisting()?.allRecords().map { RecordView($0, now: now) } ?? []
            if json { return try printJSON(records) }
            if records.isEmpty { return Terminal.out("No downloads.") }
            // Columns as wide as their widest cell: nothing is cut.
            let rows = [["ID", "STATE", "PROGRESS", "PATH"]] + records.map { r in
                [r.id, r.state, r.progressText, r.path + (r.errorCode.map { "  [\($0)]" } ?? "")]
            }
            let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                Terminal.out((0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ") + "  " + row[3])
            }
        } catch let error as CourierError {
            throw failure(error, json: json)
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one download.")

    @Argument(help: "The download's id.")
    var id: String

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @OptionGroup var store: StoreOptions

    func run() async throws {
        do {
            guard let record = try await store.openExisting()?.record(id: id) else {
                throw CourierError(.notFound, "no download with id \(id)")
            }
            var view = RecordView(record)
            // What the partial file really holds (the record may lag it by a second); a
            // completed download holds its final file; a handed-off one, what the system's
            // task has fetched as well (stored as it goes: the partial waits for it whole).
            if record.state != .completed {
                let partial = PartialFile.length(at: URL(fileURLWithPath: "/" + record.partialPath))
                view.bytesReceived = record.state == .handedOff ? max(partial, record.bytesReceived) : partial
            }
            if json { return try printJSON(view) }
            Terminal.out("""
            id:        \(view.id)
            state:     \(view.state)
            progress:  \(view.progressText)
            url:       \(view.url)
            path:      \(view.path)
            sha256:    \(view.sha256 ?? "-")
            attempts:  \(view.attempts)
            discarded: \(Format.bytes(view.discardedBytes))
            """ + (view.errorCode.map { "\nerror:     \($0): \(view.errorMessage ?? "")" } ?? ""))
        } catch let error as CourierError {
            throw failure(error, json: json)
        }
    }
}
