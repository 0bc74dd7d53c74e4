import Foundation
import Testing
@testable import CourierCLI
@testable import CourierCore

/// The interleaving behind `TerminalCLITests.oneLineRedrawnInPlace`'s failure in a loaded CI
/// pass: the bar comes last in the line's priority (percent, speed, ETA, sizes, bar), so in
/// 80 columns the terminal test's file has room for a bar only while the speed and ETA are
/// not known yet (the first redraws); once they are, every field fits and the bar does not.
/// A loaded machine whose terminal capture missed the first redraws saw no bar.
@Suite struct ProgressLineRoomTests {
    static let label = "a-rather-long-file-name-for-the-bar.bin"

    @Test func eightyColumnsHaveRoomForABarOnlyBeforeTheSpeedIsKnown() {
        let first = DownloadProgress(id: "x", bytesReceived: 0, totalBytes: 6 << 20)
        let later = DownloadProgress(id: "x", bytesReceived: 2 << 20, totalBytes: 6 << 20, bytesPerSecond: 2_097_152, secondsRemaining: 2)
        let early = ProgressLine.render(label: Self.label, progress: first, width: 80)
        let full = ProgressLine.render(label: Self.label, progress: later, width: 80)
        #expect(early.contains("["), "\(early)")
        #expect(!full.contains("[") && full.contains("/s") && full.contains("ETA") && full.contains(" / "), "\(full)")
        #expect(early.count < 80 && full.count < 80)
    }
}
