import Foundation

extension Duration {
    /// The duration in seconds, as Foundation counts them.
    package var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
