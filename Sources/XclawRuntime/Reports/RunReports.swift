import Foundation
import XclawAgent
import XclawBase
import XclawStore

/// How many run reports and stored screenshots are kept, so neither the reports folder nor the database grows
/// without bound: the reports of the newest `keepRuns` runs (sessions) while together under `maxBytes`, oldest
/// deleted first, and the screenshots of the newest `keepRuns` runs in the database (older ones become a text
/// placeholder).
public struct ReportRetention: Sendable, Hashable {
    /// The default number of runs kept.
    public static let defaultKeepRuns = 50
    /// The default cap on the reports folder: 200 MiB (a report with 20 steps at 1429×804 is about 4 MiB).
    public static let defaultMaxMB = 200

    /// Runs whose reports and screenshots are kept, newest first; at least 1.
    public var keepRuns: Int
    /// The most bytes the kept reports take together; at least 1 MiB.
    public var maxBytes: Int64

    /// Creates a policy; out-of-range values are refused with what to write instead.
    public init(keepRuns: Int = defaultKeepRuns, maxMB: Int = defaultMaxMB) throws {
        guard (1...100_000).contains(keepRuns) else {
            throw RunReportError.badSetting("keep-runs must be a whole number from 1 to 100000, got \(keepRuns)")
        }
        guard (1...1_000_000).contains(maxMB) else {
            throw RunReportError.badSetting("the report size cap must be 1 to 1000000 MB, got \(maxMB)")
        }
        self.keepRuns = keepRuns
        maxBytes = Int64(maxMB) * 1024 * 1024
    }

    /// The policy the config file sets (`report_keep_runs`, `report_max_mb`), each overridden when given; defaults
    /// where neither says. A malformed config value is refused, naming the key.
    public static func configured(
        keepRuns: Int? = nil, maxMB: Int? = nil, environment: [String: String] = XclawPaths.environment
    ) throws -> ReportRetention {
        func setting(_ key: String) throws -> Int? {
            guard let text = ConfigValues.value(key, environment: environment) else { return nil }
            guard let value = Int(text) else {
                throw RunReportError.badSetting(
                    "\(key) in \(ConfigValues.path(environment)) must be a whole number, got \"\(text)\"")
            }
            return value
        }
        return try ReportRetention(
            keepRuns: try keepRuns ?? setting("report_keep_runs") ?? defaultKeepRuns,
            maxMB: try maxMB ?? setting("report_max_mb") ?? defaultMaxMB)
    }
}

/// What a retention pass removed.
public struct RetentionOutcome: Sendable, Hashable {
    /// Report files deleted (their sessions no longer name them).
    public var deletedReports: [String] = []
    /// Stored screenshots replaced by the placeholder.
    public var prunedImages = 0
}

/// Why a report could not be written, in words that say what to do.
public enum RunReportError: ClassifiedError, Equatable {
    /// A retention setting out of range or malformed.
    case badSetting(String)
    /// The file could not be written.
    case cannotWrite(path: String, reason: String)

    /// The message.
    public var description: String {
        switch self {
        case .badSetting(let message): return message
        case .cannotWrite(let path, let reason):
            return "cannot write the report to \(path) (\(reason)); choose another path with -o, or check that its "
                + "folder exists and belongs to you"
        }
    }

    /// Both are the user's to fix: usage.
    public var exitStatus: ExitStatus { .usage }
}

/// Writing run reports where they are kept, recording them on their sessions, and retention.
public enum RunReports {
    /// Where kept reports live: `reports/` in the user's state directory (`$XDG_STATE_HOME/xclaw`, else
    /// `~/.local/state/xclaw`, beside the action logs): they outlive logouts and reboots, unlike the runtime
    /// directory, and stay private (0700).
    public static func directory(_ environment: [String: String] = XclawPaths.environment) -> URL {
        URL(fileURLWithPath: XclawPaths.userStateDirectory(environment)).appendingPathComponent("reports")
    }

    /// The HTML of session `id`'s report; `unknownSession` when there is no such run.
    public static func render(session id: Int64, store: any StoreBackend) throws -> Data {
        var report = RunReport(try store.runTranscript(session: id))
        if let (log, shot) = try store.replayLog(session: id) {
            report.replaySteps = ReplayedStep.log(log)
            report.replayShot = shot.flatMap { RunReport.Image(mediaType: "image/png", base64: $0) }
            if report.prompt.isEmpty, let replay = report.session.replay {
                report.prompt = "replay of \(replay.script)"
            }
        }
        return Data(ReportHTML.page(report).utf8)
    }

    /// Writes session `id`'s report to `path` (0600, atomically); returns the bytes written.
    @discardableResult
    public static func write(session id: Int64, store: any StoreBackend, to path: String) throws -> Int {
        let html = try render(session: id, store: store)
        do { try PrivateFiles.write(html, to: path) } catch let error as PrivateFileError {
            throw RunReportError.cannotWrite(path: path, reason: error.reason)
        }
        return html.count
    }

    /// Writes session `id`'s report to the kept place (`run-<id>.html` in `directory`), records the path on the
    /// session and applies `retention`; returns the path.
    public static func keep(
        session id: Int64, store: any StoreBackend, retention: ReportRetention,
        environment: [String: String] = XclawPaths.environment
    ) throws -> (path: String, retention: RetentionOutcome) {
        let folder: URL
        do { folder = try PrivateFiles.directory(directory(environment)) } catch let error as PrivateFileError {
            throw RunReportError.cannotWrite(path: error.path, reason: error.reason)
        }
        let path = folder.appendingPathComponent("run-\(id).html").path
        try write(session: id, store: store, to: path)
        try store.setReport(session: id, path: path)
        return (path, try applyRetention(store: store, retention: retention, sparing: id))
    }

    /// Deletes the reports of runs older than the newest `keepRuns`, then the oldest reports until the rest fit
    /// under `maxBytes` (the newest is always kept), clearing their paths on the sessions; and replaces the stored
    /// screenshots of finished runs older than the newest `keepRuns` with `ImagePruner.placeholder`, the text the
    /// agent loop itself leaves for a pruned screenshot, so a conversation rebuilt from the store stays valid.
    /// Files a session does not name (written with `-o`) are never touched, nor the report of `sparing` (one just
    /// asked for, however old its run).
    @discardableResult
    public static func applyRetention(
        store: any StoreBackend, retention: ReportRetention, sparing: Int64? = nil
    ) throws -> RetentionOutcome {
        var outcome = RetentionOutcome()
        let cutoff = try store.retentionCutoff(keep: retention.keepRuns)
        var total: Int64 = 0
        for (index, report) in try store.reports().enumerated() {
            let size = (try? FileManager.default.attributesOfItem(atPath: report.path)[.size] as? Int64) ?? nil
            guard let size else {  // already gone: forget it
                try store.setReport(session: report.session, path: nil)
                continue
            }
            let tooOld = cutoff.map { report.session < $0 } ?? false
            if report.session != sparing && (tooOld || (index > 0 && total + size > retention.maxBytes)) {
                unlink(report.path)
                try store.setReport(session: report.session, path: nil)
                outcome.deletedReports.append(report.path)
            } else {
                total += size
            }
        }
        if let cutoff {
            outcome.prunedImages = try store.pruneImages(sessionsBefore: cutoff, placeholder: ImagePruner.placeholder)
            outcome.prunedImages += try store.pruneReplayScreenshots(sessionsBefore: cutoff)
        }
        return outcome
    }

    /// The newest session id now, so `keepScheduled` can tell the sessions a run creates after it (0: none yet).
    public static func mark(store: any StoreBackend) throws -> Int64 {
        try store.sessions(agent: nil).last?.id ?? 0
    }

    /// After a scheduled run of `task` for `agent`: writes and keeps the report of every session of that task
    /// started after `mark` (the run's own: its batch holds the `schedule:TASK` message the run sent); returns the
    /// paths.
    public static func keepScheduled(
        agent: String, task: String, after mark: Int64, store: any StoreBackend, retention: ReportRetention,
        environment: [String: String] = XclawPaths.environment
    ) throws -> [String] {
        try store.runs(agent: agent, task: task).filter { $0.session.id > mark }.map { run in
            try keep(session: run.session.id, store: store, retention: retention, environment: environment).path
        }
    }
}
