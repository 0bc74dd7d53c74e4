import CourierCore

extension BackgroundTransfers {
    /// The running downloads only: ``handOffAll(among:)`` hands off the queued ones too.
    @available(*, deprecated, renamed: "handOffAll(among:)", message: "handOffAll() also hands off the queued downloads")
    @discardableResult
    public func handOffRunning() async -> [String] {
        await handOffAll(among: await downloader.runningIDs)
    }
}
