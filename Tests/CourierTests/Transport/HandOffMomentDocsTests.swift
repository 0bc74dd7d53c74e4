import Foundation
import Testing
import CourierURLSession

/// One documented moment to hand off (issues 26 and 27): the DocC pages, the code
/// comments and the example app name the phase `AppLifecycle.handOffPhase` names, and no
/// other. (They disagreed: the README said `.inactive`, the DocC page and the type's own
/// documentation `.background`.)
@Suite struct HandOffMomentDocsTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let documents = [
        "Sources/CourierURLSession/CourierURLSession.docc/BackgroundTransfersGuide.md",
        "Sources/CourierURLSession/CourierURLSession.docc/AddingCourierToAnApp.md",
        "Sources/CourierURLSession/CourierURLSession.docc/CourierURLSession.md",
        "Sources/CourierURLSession/BackgroundTransfers.swift",
        "Sources/CourierURLSession/AppLifecycle.swift",
        "Examples/CourierDownloads/Sources/CourierDownloads/CourierDownloadsApp.swift",
    ]

    /// The phases a text names as the moment to hand off: on each line about handing off,
    /// every `.active`, `.inactive` or `.background`, except `.active` (where transfers come
    /// back) and the documented fallback for a scene that skips `.inactive`.
    static func handOffPhases(in text: String) -> Set<String> {
        var phases: Set<String> = []
        for line in text.split(separator: "\n") {
            let lower = line.lowercased()
            guard lower.contains("hand off") || lower.contains("hands off") || lower.contains("handoffphase") || lower.contains("handing off") else { continue }
            if lower.contains("skips") { continue }
            for phase in AppLifecycle.Phase.allCases where phase != .active && line.contains(".\(phase.rawValue)") {
                // `.background` inside a longer word (a `.backgroundConfiguration`) is not a phase.
                let pattern = ".\(phase.rawValue)"
                var rest = Substring(line)
                while let r = rest.range(of: pattern) {
                    let next = rest[r.upperBound...].first
                    if next.map({ !$0.isLetter && !$0.isNumber }) ?? true { phases.insert(phase.rawValue) }
                    rest = rest[r.upperBound...]
                }
            }
        }
        return phases
    }

    @Test(arguments: documents)
    func namesTheOneMoment(_ path: String) throws {
        let text = try String(contentsOf: Self.package.appendingPathComponent(path), encoding: .utf8)
        let named = Self.handOffPhases(in: text)
        #expect(named == [AppLifecycle.handOffPhase.rawValue], "\(path) names \(named.sorted()) as the moment to hand off")
    }

    @Test func theRuleCatchesADocumentThatNamesAnother() {
        #expect(Self.handOffPhases(in: "await transfers.handOffRunning()   // hand off at scenePhase == .background") == ["background"])
        #expect(Self.handOffPhases(in: "hands off when the scene becomes `.inactive` and takes back at `.active`") == ["inactive"])
    }
}
