import CourierDownloadsModel
import CourierObservation
import SwiftUI

/// The catalog, one row per file, each following its download (`DownloadList`).
struct DownloadsView: View {
    let transfers: Transfers

    var body: some View {
        List(transfers.catalog) { entry in
            CatalogRow(transfers: transfers, entry: entry, item: transfers.list.item(id: entry.id))
        }
    }
}

/// One file: its title, where its download stands, DOWNLOAD and the controls.
struct CatalogRow: View {
    let transfers: Transfers
    let entry: CatalogEntry
    let item: DownloadItem?      // observed: the row redraws when its download changes
    @State private var message: String?

    var body: some View {
        VStack {
            HStack {
                Text(entry.title)
                Button("DOWNLOAD") { Task { message = describe(await transfers.press(entry)) } }
            }
            if let item, item.phase != .completed {
                ProgressView(value: item.fractionCompleted ?? 0)
                HStack {
                    Button("Pause") { Task { try? await item.pause() } }
                        .disabled(!item.snapshot.isActive)
                    Button("Resume") { Task { try? await item.resume() } }
                        .disabled(item.phase != .paused && item.phase != .failed)
                    Button("Cancel") { Task { try? await item.cancel() } }
                }
            }
            Text(message ?? transfers.detail(of: item))
        }
    }

    private func describe(_ pressed: Transfers.Pressed) -> String? {
        switch pressed {
        case let .opened(file): return "Opened \(file.lastPathComponent)"
        case .started: return nil                      // the row follows the download
        case .alreadyRunning: return "Already downloading"
        case let .failed(why): return why
        }
    }
}
