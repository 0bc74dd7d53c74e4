import Foundation

/// The seven rules of the DOWNLOAD button (seed 002), taken literally, as one pure rule book
/// shared by ``DownloadButton`` (engine records) and the media library's button (library
/// versions): each says what it holds in the seed's terms, the rules say what to do.
public enum DownloadButtonRules {
    /// What a button's download holds, in the seed's terms.
    public enum Holding: Sendable, Equatable {
        /// No record (rule 5).
        case nothing
        /// Complete, its file at `file`; `present`: the file is there (with its verified size).
        case complete(file: URL, present: Bool)
        /// In progress by its record, whatever the file (rule 4): queued, downloading,
        /// handed to the system, or being finished.
        case inProgress
        /// Any other status (rule 6): paused, failed.
        case stopped
    }

    /// What the button does.
    public enum Verdict: Sendable, Equatable {
        /// Rule 1: open this file (it opened).
        case open(URL)
        /// Rule 3: complete, but the file does not open: show this error.
        case error(CourierError)
        /// Rule 4: in progress: nothing else is done.
        case inProgress
        /// Rules 2, 5, 6: download, after rule 7's clean-up of earlier tasks (record and
        /// file); `rule` says which led here.
        case download(rule: Int)
    }

    /// The verdict for `holding`; `opens` tries the file of a complete download (rules 1, 3).
    public static func decide(_ holding: Holding, opens: (URL) throws -> Void) -> Verdict {
        switch holding {
        case .nothing:
            return .download(rule: 5)
        case let .complete(file, present):
            guard present else { return .download(rule: 2) }
            do {
                try opens(file)
                return .open(file)
            } catch let error as CourierError {
                return .error(error)
            } catch {
                return .error(CourierError(.readFailed, "\(file.lastPathComponent) does not open", underlying: error))
            }
        case .inProgress:
            return .inProgress
        case .stopped:
            return .download(rule: 6)
        }
    }
}
